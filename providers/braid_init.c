/* braid_init.c: the provider entry point (fi_prov_ini) and every FI_BRAID_* setting. */
#include <ctype.h>
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
	.rc_timeout = BRAID_RC_DEFAULT_TIMEOUT,
	.rc_retry = BRAID_RC_DEFAULT_RETRY,
	.rc_rnr_retry = BRAID_RC_DEFAULT_RNR_RETRY,
	.rc_min_rnr_timer = BRAID_RC_DEFAULT_MIN_RNR_TIMER,
};

/* an integer setting within [@lo, @hi]; out of range: a warning, the default stays */
static void braid_param_int(const char *name, int lo, int hi, int *dst)
{
	int val;

	if (fi_param_get_int(&braid_prov, name, &val))
		return;
	if (val >= lo && val <= hi) {
		*dst = val;
	} else {
		char env[64];
		size_t i;

		for (i = 0; name[i] && i < sizeof(env) - 1; i++)
			env[i] = (char)toupper((unsigned char)name[i]);
		env[i] = 0;
		BRAID_WARN(FI_LOG_CORE, "FI_BRAID_%s=%d is out of range %d..%d; using %d\n",
			   env, val, lo, hi, *dst);
	}
}

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
	fi_param_define(&braid_prov, "rc_timeout", FI_PARAM_INT,
			"MSG (RoCEv2 RC): the QP's local ACK timeout as an IBTA code, "
			"0 to 31: 4.096 us * 2^code (14: 67 ms, as perftest and "
			"rdma-core's examples set; 18: 1.07 s, what rdma_cm gives "
			"libfabric's verbs provider on a ConnectX NIC); 0 never "
			"times out. (default: %d)",
			braid_cfg.rc_timeout);
	fi_param_define(&braid_prov, "rc_retry", FI_PARAM_INT,
			"MSG (RoCEv2 RC): retransmissions (local ACK timeouts or PSN "
			"sequence NAKs) in a row without forward progress before the "
			"QP fails its work with FI_ETIMEDOUT, 0 to 7. (default: %d)",
			braid_cfg.rc_retry);
	fi_param_define(&braid_prov, "rc_rnr_retry", FI_PARAM_INT,
			"MSG (RoCEv2 RC): retries after receiver-not-ready NAKs in a "
			"row before the QP fails with FI_ENORX, 0 to 7; 7 retries "
			"forever. (default: %d)", braid_cfg.rc_rnr_retry);
	fi_param_define(&braid_prov, "rc_min_rnr_timer", FI_PARAM_INT,
			"MSG (RoCEv2 RC): the RNR NAK timer code (IBTA Table 45, 0 to "
			"31; 12: 0.64 ms, 0: 655 ms) a peer is asked to wait when no "
			"receive is posted, like FI_VERBS_MIN_RNR_TIMER. (default: %d)",
			braid_cfg.rc_min_rnr_timer);

	if (!fi_param_get_str(&braid_prov, "wire", &str) && str && *str)
		braid_cfg.wire = str;
	if (!fi_param_get_str(&braid_prov, "iface", &str) && str && *str)
		braid_cfg.iface = str;
	braid_param_int("paths", 1, BRAID_WIRE_MAX_PATHS, &braid_cfg.paths);
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
	braid_param_int("rc_timeout", 0, 31, &braid_cfg.rc_timeout);
	braid_param_int("rc_retry", 0, 7, &braid_cfg.rc_retry);
	braid_param_int("rc_rnr_retry", 0, 7, &braid_cfg.rc_rnr_retry);
	braid_param_int("rc_min_rnr_timer", 0, 31, &braid_cfg.rc_min_rnr_timer);
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
