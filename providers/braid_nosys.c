/* SPDX-License-Identifier: BSD-2-Clause */
/* braid_nosys.c: -FI_ENOSYS for every libfabric call braid does not implement. */
#include <rdma/fi_collective.h>

#include "braid.h"


int braid_nosys_bind(struct fid *fid, struct fid *bfid, uint64_t flags) { return -FI_ENOSYS; }
int braid_nosys_control(struct fid *fid, int command, void *arg) { return -FI_ENOSYS; }
int braid_nosys_ops_open(struct fid *fid, const char *name, uint64_t flags,
			 void **ops, void *context) { return -FI_ENOSYS; }
int braid_nosys_tostr(const struct fid *fid, char *buf, size_t len) { return -FI_ENOSYS; }
int braid_nosys_ops_set(struct fid *fid, const char *name, uint64_t flags,
			void *ops, void *context) { return -FI_ENOSYS; }

/* ---- fi_ops_tagged ---- */
static ssize_t tag_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
			fi_addr_t src_addr, uint64_t tag, uint64_t ignore,
			void *context) { return -FI_ENOSYS; }
static ssize_t tag_recvv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			 size_t count, fi_addr_t src_addr, uint64_t tag,
			 uint64_t ignore, void *context) { return -FI_ENOSYS; }
static ssize_t tag_recvmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			   uint64_t flags) { return -FI_ENOSYS; }
static ssize_t tag_send(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			fi_addr_t dest_addr, uint64_t tag, void *context) { return -FI_ENOSYS; }
static ssize_t tag_sendv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			 size_t count, fi_addr_t dest_addr, uint64_t tag,
			 void *context) { return -FI_ENOSYS; }
static ssize_t tag_sendmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			   uint64_t flags) { return -FI_ENOSYS; }
static ssize_t tag_inject(struct fid_ep *ep, const void *buf, size_t len,
			  fi_addr_t dest_addr, uint64_t tag) { return -FI_ENOSYS; }
static ssize_t tag_senddata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			    uint64_t data, fi_addr_t dest_addr, uint64_t tag,
			    void *context) { return -FI_ENOSYS; }
static ssize_t tag_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			      uint64_t data, fi_addr_t dest_addr, uint64_t tag) { return -FI_ENOSYS; }

struct fi_ops_tagged braid_nosys_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = tag_recv, .recvv = tag_recvv, .recvmsg = tag_recvmsg,
	.send = tag_send, .sendv = tag_sendv, .sendmsg = tag_sendmsg,
	.inject = tag_inject, .senddata = tag_senddata, .injectdata = tag_injectdata,
};

/* ---- fi_ops_rma ---- */
static ssize_t rma_read(struct fid_ep *ep, void *buf, size_t len, void *desc,
			fi_addr_t src_addr, uint64_t addr, uint64_t key,
			void *context) { return -FI_ENOSYS; }
static ssize_t rma_readv(struct fid_ep *ep, const struct iovec *iov, void **desc,
			 size_t count, fi_addr_t src_addr, uint64_t addr, uint64_t key,
			 void *context) { return -FI_ENOSYS; }
static ssize_t rma_readmsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			   uint64_t flags) { return -FI_ENOSYS; }
static ssize_t rma_write(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			 fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			 void *context) { return -FI_ENOSYS; }
static ssize_t rma_writev(struct fid_ep *ep, const struct iovec *iov, void **desc,
			  size_t count, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			  void *context) { return -FI_ENOSYS; }
static ssize_t rma_writemsg(struct fid_ep *ep, const struct fi_msg_rma *msg,
			    uint64_t flags) { return -FI_ENOSYS; }
static ssize_t rma_inject(struct fid_ep *ep, const void *buf, size_t len,
			  fi_addr_t dest_addr, uint64_t addr, uint64_t key) { return -FI_ENOSYS; }
static ssize_t rma_writedata(struct fid_ep *ep, const void *buf, size_t len, void *desc,
			     uint64_t data, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			     void *context) { return -FI_ENOSYS; }
static ssize_t rma_injectdata(struct fid_ep *ep, const void *buf, size_t len,
			      uint64_t data, fi_addr_t dest_addr, uint64_t addr,
			      uint64_t key) { return -FI_ENOSYS; }

struct fi_ops_rma braid_nosys_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = rma_read, .readv = rma_readv, .readmsg = rma_readmsg,
	.write = rma_write, .writev = rma_writev, .writemsg = rma_writemsg,
	.inject = rma_inject, .writedata = rma_writedata, .injectdata = rma_injectdata,
};

/* ---- fi_ops_atomic ---- */
static ssize_t at_write(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			enum fi_datatype datatype, enum fi_op op, void *context) { return -FI_ENOSYS; }
static ssize_t at_writev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
			 size_t count, fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			 enum fi_datatype datatype, enum fi_op op, void *context) { return -FI_ENOSYS; }
static ssize_t at_writemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
			   uint64_t flags) { return -FI_ENOSYS; }
static ssize_t at_inject(struct fid_ep *ep, const void *buf, size_t count,
			 fi_addr_t dest_addr, uint64_t addr, uint64_t key,
			 enum fi_datatype datatype, enum fi_op op) { return -FI_ENOSYS; }
static ssize_t at_readwrite(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			    void *result, void *result_desc, fi_addr_t dest_addr,
			    uint64_t addr, uint64_t key, enum fi_datatype datatype,
			    enum fi_op op, void *context) { return -FI_ENOSYS; }
static ssize_t at_readwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
			     size_t count, struct fi_ioc *resultv, void **result_desc,
			     size_t result_count, fi_addr_t dest_addr, uint64_t addr,
			     uint64_t key, enum fi_datatype datatype, enum fi_op op,
			     void *context) { return -FI_ENOSYS; }
static ssize_t at_readwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
			       struct fi_ioc *resultv, void **result_desc,
			       size_t result_count, uint64_t flags) { return -FI_ENOSYS; }
static ssize_t at_compwrite(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			    const void *compare, void *compare_desc, void *result,
			    void *result_desc, fi_addr_t dest_addr, uint64_t addr,
			    uint64_t key, enum fi_datatype datatype, enum fi_op op,
			    void *context) { return -FI_ENOSYS; }
static ssize_t at_compwritev(struct fid_ep *ep, const struct fi_ioc *iov, void **desc,
			     size_t count, const struct fi_ioc *comparev,
			     void **compare_desc, size_t compare_count,
			     struct fi_ioc *resultv, void **result_desc,
			     size_t result_count, fi_addr_t dest_addr, uint64_t addr,
			     uint64_t key, enum fi_datatype datatype, enum fi_op op,
			     void *context) { return -FI_ENOSYS; }
static ssize_t at_compwritemsg(struct fid_ep *ep, const struct fi_msg_atomic *msg,
			       const struct fi_ioc *comparev, void **compare_desc,
			       size_t compare_count, struct fi_ioc *resultv,
			       void **result_desc, size_t result_count,
			       uint64_t flags) { return -FI_ENOSYS; }
static int at_valid(struct fid_ep *ep, enum fi_datatype datatype, enum fi_op op,
		    size_t *count) { return -FI_ENOSYS; }

struct fi_ops_atomic braid_nosys_atomic_ops = {
	.size = sizeof(struct fi_ops_atomic),
	.write = at_write, .writev = at_writev, .writemsg = at_writemsg,
	.inject = at_inject, .readwrite = at_readwrite, .readwritev = at_readwritev,
	.readwritemsg = at_readwritemsg, .compwrite = at_compwrite,
	.compwritev = at_compwritev, .compwritemsg = at_compwritemsg,
	.writevalid = at_valid, .readwritevalid = at_valid, .compwritevalid = at_valid,
};

/* ---- fi_ops_collective ---- */
static ssize_t coll_barrier(struct fid_ep *ep, fi_addr_t coll_addr, void *context) { return -FI_ENOSYS; }
static ssize_t coll_broadcast(struct fid_ep *ep, void *buf, size_t count, void *desc,
			      fi_addr_t coll_addr, fi_addr_t root_addr,
			      enum fi_datatype datatype, uint64_t flags,
			      void *context) { return -FI_ENOSYS; }
static ssize_t coll_alltoall(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			     void *result, void *result_desc, fi_addr_t coll_addr,
			     enum fi_datatype datatype, uint64_t flags,
			     void *context) { return -FI_ENOSYS; }
static ssize_t coll_allreduce(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			      void *result, void *result_desc, fi_addr_t coll_addr,
			      enum fi_datatype datatype, enum fi_op op, uint64_t flags,
			      void *context) { return -FI_ENOSYS; }
static ssize_t coll_allgather(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			      void *result, void *result_desc, fi_addr_t coll_addr,
			      enum fi_datatype datatype, uint64_t flags,
			      void *context) { return -FI_ENOSYS; }
static ssize_t coll_reduce_scatter(struct fid_ep *ep, const void *buf, size_t count,
				   void *desc, void *result, void *result_desc,
				   fi_addr_t coll_addr, enum fi_datatype datatype,
				   enum fi_op op, uint64_t flags, void *context) { return -FI_ENOSYS; }
static ssize_t coll_reduce(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			   void *result, void *result_desc, fi_addr_t coll_addr,
			   fi_addr_t root_addr, enum fi_datatype datatype, enum fi_op op,
			   uint64_t flags, void *context) { return -FI_ENOSYS; }
static ssize_t coll_scatter(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			    void *result, void *result_desc, fi_addr_t coll_addr,
			    fi_addr_t root_addr, enum fi_datatype datatype, uint64_t flags,
			    void *context) { return -FI_ENOSYS; }
static ssize_t coll_gather(struct fid_ep *ep, const void *buf, size_t count, void *desc,
			   void *result, void *result_desc, fi_addr_t coll_addr,
			   fi_addr_t root_addr, enum fi_datatype datatype, uint64_t flags,
			   void *context) { return -FI_ENOSYS; }
static ssize_t coll_msg(struct fid_ep *ep, const struct fi_msg_collective *msg,
			struct fi_ioc *resultv, void **result_desc, size_t result_count,
			uint64_t flags) { return -FI_ENOSYS; }
static ssize_t coll_barrier2(struct fid_ep *ep, fi_addr_t coll_addr, uint64_t flags,
			     void *context) { return -FI_ENOSYS; }

struct fi_ops_collective braid_nosys_collective_ops = {
	.size = sizeof(struct fi_ops_collective),
	.barrier = coll_barrier, .broadcast = coll_broadcast, .alltoall = coll_alltoall,
	.allreduce = coll_allreduce, .allgather = coll_allgather,
	.reduce_scatter = coll_reduce_scatter, .reduce = coll_reduce,
	.scatter = coll_scatter, .gather = coll_gather, .msg = coll_msg,
	.barrier2 = coll_barrier2,
};

/* ---- fi_cm(3), for objects that are not connection endpoints (shared contexts) ---- */

static int cm_setname(fid_t fid, void *addr, size_t addrlen) { return -FI_ENOSYS; }
static int cm_getname(fid_t fid, void *addr, size_t *addrlen) { return -FI_ENOSYS; }
static int cm_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen) { return -FI_ENOSYS; }
static int cm_connect(struct fid_ep *ep, const void *addr, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}
static int cm_listen(struct fid_pep *pep) { return -FI_ENOSYS; }
static int cm_accept(struct fid_ep *ep, const void *param, size_t paramlen) { return -FI_ENOSYS; }
static int cm_reject(struct fid_pep *pep, fid_t handle, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}
static int cm_shutdown(struct fid_ep *ep, uint64_t flags) { return -FI_ENOSYS; }
static int cm_join(struct fid_ep *ep, const void *addr, uint64_t flags, struct fid_mc **mc,
		   void *context)
{
	return -FI_ENOSYS;
}

struct fi_ops_cm braid_nosys_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = cm_setname,
	.getname = cm_getname,
	.getpeer = cm_getpeer,
	.connect = cm_connect,
	.listen = cm_listen,
	.accept = cm_accept,
	.reject = cm_reject,
	.shutdown = cm_shutdown,
	.join = cm_join,
};
