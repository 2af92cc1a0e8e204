/* braid_wire.c: the table of built-in wires, chosen at run time by FI_BRAID_WIRE. */
#include <string.h>

#include "braid/braid_wire.h"

extern const struct braid_wire_ops braid_udp_wire_ops;
#ifdef BRAID_HAVE_DPDK
extern const struct braid_wire_ops braid_dpdk_wire_ops;
#endif

static const struct braid_wire_ops *const braid_wires[] = {
	&braid_udp_wire_ops,
#ifdef BRAID_HAVE_DPDK
	&braid_dpdk_wire_ops,
#endif
};

const struct braid_wire_ops *braid_wire_find(const char *name)
{
	size_t i;

	if (!name)
		return NULL;
	for (i = 0; i < sizeof(braid_wires) / sizeof(braid_wires[0]); i++) {
		if (!strcmp(braid_wires[i]->name, name))
			return braid_wires[i];
	}
	return NULL;
}
