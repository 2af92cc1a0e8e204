/* braid_init.c: the provider entry point (fi_prov_ini) and every FI_BRAID_* setting. */
#include <stdlib.h>
#include <string.h>

#include "braid.h"

struct braid_config braid_cfg = {
	.wire = "udp",
	.iface = NULL,
	.paths = 16,
	.tx_size = 1024,
	.rx_size = 1024,
	.cq_size = 1024,
	.eq_size = 256,
	.sockbuf = 4 << 20,
	.unexp_bytes = 16 << 20,
	.peer_timeout_ms = 5000,
};

static void braid_cleanup(void)
{
}

struct fi_provider braid_prov = {
	.version = FI_VERSION(BRAID_MAJOR, BRAID_MINOR),
	.fi_version = BRAID_FI_VERSION,
	.name = BRAID_PROV_NAME,
	.getinfo = braid_getinfo,
	.fabric = braid_fabric_open,
	.cleanup = braid_cleanup,
};

/* Define every setting once (fi_info -e lists them), then read them once. */
static void braid_init_env(void)
{
	size_t sz;
	char *str;
	int val;

	fi_param_define(&braid_prov, "wire", FI_PARAM_STRING,
			"Wire that carries braid's packets: udp (kernel UDP sockets). "
			"(default: udp)");
	fi_param_define(&braid_prov, "iface", FI_PARAM_STRING,
			"Only offer this network interface (e.g. eth0, lo). "
			"(default: every interface that is up and has an IPv4 address)");
	fi_param_define(&braid_prov, "paths", FI_PARAM_INT,
			"Transmit paths per endpoint, 1 to %d: each is a UDP source "
			"port, the entropy ECMP hashes; endpoints with more than one "
			"path add as many spare ports, up to 32, for paths that turn "
			"sick or die. (default: %d)",
			BRAID_WIRE_MAX_PATHS, braid_cfg.paths);
	fi_param_define(&braid_prov, "tx_size", FI_PARAM_SIZE_T,
			"Transmit queue depth per endpoint. (default: %zu)", braid_cfg.tx_size);
	fi_param_define(&braid_prov, "rx_size", FI_PARAM_SIZE_T,
			"Receive queue depth (posted receives) per endpoint. (default: %zu)",
			braid_cfg.rx_size);
	fi_param_define(&braid_prov, "cq_size", FI_PARAM_SIZE_T,
			"Completion queue depth when fi_cq_attr.size is 0. (default: %zu)",
			braid_cfg.cq_size);
	fi_param_define(&braid_prov, "eq_size", FI_PARAM_SIZE_T,
			"Event queue depth when fi_eq_attr.size is 0. (default: %zu)",
			braid_cfg.eq_size);
	fi_param_define(&braid_prov, "sockbuf", FI_PARAM_INT,
			"Socket send/receive buffer bytes per UDP socket; 0 keeps the "
			"system default. (default: %d)", braid_cfg.sockbuf);

	fi_param_define(&braid_prov, "unexp_bytes", FI_PARAM_SIZE_T,
			"RDM: bytes per endpoint for data that arrives before a receive "
			"matches it; beyond it the sender is held back (flow control). "
			"(default: %zu)", braid_cfg.unexp_bytes);
	fi_param_define(&braid_prov, "peer_timeout_ms", FI_PARAM_INT,
			"RDM: a peer that answers nothing for this long (or 16 "
			"retransmission timeouts of its slowest path, if longer) "
			"fails its pending operations with FI_EHOSTUNREACH, receives "
			"of messages it had begun to send included. MSG: how long "
			"fi_connect and fi_accept wait for the other side before an "
			"FI_ETIMEDOUT error event. (default: %d)",
			braid_cfg.peer_timeout_ms);
	fi_param_define(&braid_prov, "rc_port", FI_PARAM_INT,
			"MSG (RoCEv2 RC): the UDP port RoCEv2 packets are received on; "
			"0 means 4791, the RoCEv2 port, when it is free on the "
			"address, else any free port (peers learn it in the "
			"handshake). (default: %d)", braid_cfg.rc_port);

	if (!fi_param_get_str(&braid_prov, "wire", &str) && str && *str)
		braid_cfg.wire = str;
	if (!fi_param_get_str(&braid_prov, "iface", &str) && str && *str)
		braid_cfg.iface = str;
	if (!fi_param_get_int(&braid_prov, "paths", &val)) {
		if (val >= 1 && val <= BRAID_WIRE_MAX_PATHS)
			braid_cfg.paths = val;
		else
			BRAID_WARN(FI_LOG_CORE, "FI_BRAID_PATHS=%d is out of range 1..%d; using %d\n",
				   val, BRAID_WIRE_MAX_PATHS, braid_cfg.paths);
	}
	if (!fi_param_get_size_t(&braid_prov, "tx_size", &sz) && sz)
		braid_cfg.tx_size = sz;
	if (!fi_param_get_size_t(&braid_prov, "rx_size", &sz) && sz)
		braid_cfg.rx_size = sz;
	if (!fi_param_get_size_t(&braid_prov, "cq_size", &sz) && sz)
		braid_cfg.cq_size = sz;
	if (!fi_param_get_size_t(&braid_prov, "eq_size", &sz) && sz)
		braid_cfg.eq_size = sz;
	if (!fi_param_get_int(&braid_prov, "sockbuf", &val) && val >= 0)
		braid_cfg.sockbuf = val;
	if (!fi_param_get_size_t(&braid_prov, "unexp_bytes", &sz) && sz)
		braid_cfg.unexp_bytes = sz;
	if (!fi_param_get_int(&braid_prov, "peer_timeout_ms", &val) && val > 0)
		braid_cfg.peer_timeout_ms = val;
	if (!fi_param_get_int(&braid_prov, "rc_port", &val) && val >= 0 && val < 65536)
		braid_cfg.rc_port = val;
}

FI_EXT_INI
{
	braid_init_env();
	if (!braid_wire_find(braid_cfg.wire)) {
		BRAID_WARN(FI_LOG_CORE, "FI_BRAID_WIRE=%s: no such wire; using udp\n",
			   braid_cfg.wire);
		braid_cfg.wire = "udp";
	}
	BRAID_INFO(FI_LOG_CORE, "braid %d.%d: wire %s, %d paths per endpoint\n",
		   BRAID_MAJOR, BRAID_MINOR, braid_cfg.wire, braid_cfg.paths);
	return &braid_prov;
}
