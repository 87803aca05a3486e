// SPDX-License-Identifier: MIT
/*
 * PID 1 of the arm64 boot test (kernel/cross/boot-test.sh), static, alone in its
 * initramfs with /sch_confucius.ko: loads the module, attaches it as lo's root qdisc with
 * a shaped rate, sends UDP datagrams to itself through it, checks that the qdisc counted
 * them and that they all arrived, removes the qdisc and the module, and powers off.
 * The last line it prints is "boot-test: ok" or "boot-test: FAIL: <why>".
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/gen_stats.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pkt_sched_confucius.h"

#define MODULE_PATH	"/sch_confucius.ko"
#define DATAGRAMS	200
#define DATAGRAM_LEN	1000
#define RATE_BYTES	(1000 * 1000)	/* 1 MB/s: 200 datagrams take about 0.2 s */

struct request {
	struct nlmsghdr nh;
	struct tcmsg tc;
	char attrs[256];
};

static void finish(const char *fmt, ...)
{
	va_list ap;

	printf("boot-test: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	sync();
	reboot(RB_POWER_OFF);
	_exit(1);
}

static struct rtattr *add_attr(struct nlmsghdr *nh, unsigned short type, const void *data, size_t len)
{
	struct rtattr *rta = (struct rtattr *)((char *)nh + NLMSG_ALIGN(nh->nlmsg_len));

	rta->rta_type = type;
	rta->rta_len = (unsigned short)RTA_LENGTH(len);
	if (len)
		memcpy(RTA_DATA(rta), data, len);
	nh->nlmsg_len = NLMSG_ALIGN(nh->nlmsg_len) + RTA_ALIGN(rta->rta_len);
	return rta;
}

static void init_request(struct request *req, unsigned short type, unsigned short flags, int ifindex)
{
	memset(req, 0, sizeof(*req));
	req->nh.nlmsg_len = NLMSG_LENGTH(sizeof(req->tc));
	req->nh.nlmsg_type = type;
	req->nh.nlmsg_flags = NLM_F_REQUEST | flags;
	req->tc.tcm_family = AF_UNSPEC;
	req->tc.tcm_ifindex = ifindex;
	req->tc.tcm_parent = TC_H_ROOT;
}

/* Sends a request that wants an acknowledgement; returns the kernel's error (0 on success). */
static int transact(int nl, struct request *req)
{
	char buf[4096];
	struct nlmsghdr *nh = (struct nlmsghdr *)buf;
	ssize_t n;

	req->nh.nlmsg_flags |= NLM_F_ACK;
	if (send(nl, req, req->nh.nlmsg_len, 0) < 0)
		return -errno;
	n = recv(nl, buf, sizeof(buf), 0);
	if (n < (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)) || nh->nlmsg_type != NLMSG_ERROR)
		return -EPROTO;
	return ((struct nlmsgerr *)NLMSG_DATA(nh))->error;
}

static int add_confucius(int nl, int ifindex)
{
	uint64_t rate = RATE_BYTES;
	struct request req;
	struct rtattr *opts;

	init_request(&req, RTM_NEWQDISC, NLM_F_CREATE | NLM_F_EXCL, ifindex);
	add_attr(&req.nh, TCA_KIND, "confucius", sizeof("confucius"));
	opts = add_attr(&req.nh, TCA_OPTIONS | NLA_F_NESTED, NULL, 0);
	add_attr(&req.nh, TCA_CONFUCIUS_BANDWIDTH64, &rate, sizeof(rate));
	opts->rta_len = (unsigned short)((char *)&req + req.nh.nlmsg_len - (char *)opts);
	return transact(nl, &req);
}

/* The root qdisc's kind and packet count on ifindex, from a qdisc dump; 0 when found. */
static int root_qdisc_stats(int nl, int ifindex, char *kind, size_t kind_len, uint32_t *packets)
{
	struct request req;
	char buf[16384];
	ssize_t n;

	init_request(&req, RTM_GETQDISC, NLM_F_DUMP, 0);
	if (send(nl, &req, req.nh.nlmsg_len, 0) < 0)
		return -errno;
	while ((n = recv(nl, buf, sizeof(buf), 0)) > 0) {
		struct nlmsghdr *nh;

		for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (size_t)n); nh = NLMSG_NEXT(nh, n)) {
			struct tcmsg *tc = NLMSG_DATA(nh);
			int len = (int)nh->nlmsg_len - NLMSG_LENGTH(sizeof(*tc));
			struct rtattr *rta;

			if (nh->nlmsg_type == NLMSG_DONE)
				return kind[0] ? 0 : -ENOENT;
			if (nh->nlmsg_type != RTM_NEWQDISC || tc->tcm_ifindex != ifindex ||
			    tc->tcm_parent != TC_H_ROOT)
				continue;
			for (rta = TCA_RTA(tc); RTA_OK(rta, len); rta = RTA_NEXT(rta, len)) {
				if (rta->rta_type == TCA_KIND)
					snprintf(kind, kind_len, "%s", (char *)RTA_DATA(rta));
				if (rta->rta_type == TCA_STATS)
					*packets = ((struct tc_stats *)RTA_DATA(rta))->packets;
			}
		}
	}
	return -EPROTO;
}

static void bring_up(const char *ifname)
{
	struct ifreq ifr = { 0 };
	int s = socket(AF_INET, SOCK_DGRAM, 0);

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		finish("FAIL: %s: %s", ifname, strerror(errno));
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		finish("FAIL: bringing %s up: %s", ifname, strerror(errno));
	close(s);
}

/* Sends DATAGRAMS to itself over lo; returns how many came back. */
static int loop_datagrams(void)
{
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct timeval wait = { .tv_sec = 5 };
	socklen_t alen = sizeof(addr);
	char payload[DATAGRAM_LEN] = { 0 };
	int rx = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0);
	int rcvbuf = 4 << 20, i, got = 0;

	if (rx < 0 || tx < 0 || bind(rx, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    getsockname(rx, (struct sockaddr *)&addr, &alen) < 0)
		finish("FAIL: sockets: %s", strerror(errno));
	setsockopt(rx, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	setsockopt(rx, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
	for (i = 0; i < DATAGRAMS; i++)
		if (sendto(tx, payload, sizeof(payload), 0, (struct sockaddr *)&addr, sizeof(addr)) < 0)
			finish("FAIL: sendto: %s", strerror(errno));
	while (got < DATAGRAMS && recv(rx, payload, sizeof(payload), 0) == (ssize_t)sizeof(payload))
		got++;
	close(rx);
	close(tx);
	return got;
}

int main(void)
{
	char kind[32] = "";
	uint32_t packets = 0;
	struct request req;
	int nl, fd, err, got, lo;

	mount("proc", "/proc", "proc", 0, NULL);
	fd = open(MODULE_PATH, O_RDONLY);
	if (fd < 0 || syscall(SYS_finit_module, fd, "", 0) < 0)
		finish("FAIL: loading %s: %s", MODULE_PATH, strerror(errno));
	close(fd);
	bring_up("lo");
	lo = (int)if_nametoindex("lo");
	nl = socket(AF_NETLINK, SOCK_RAW, NETLINK_ROUTE);
	if (nl < 0)
		finish("FAIL: netlink: %s", strerror(errno));
	err = add_confucius(nl, lo);
	if (err)
		finish("FAIL: adding the confucius qdisc: %s", strerror(-err));
	got = loop_datagrams();
	err = root_qdisc_stats(nl, lo, kind, sizeof(kind), &packets);
	if (err || strcmp(kind, "confucius"))
		finish("FAIL: lo's root qdisc is '%s' (%s)", kind, strerror(-err));
	printf("boot-test: confucius on lo sent %u packets, %d of %d datagrams arrived\n",
	       packets, got, DATAGRAMS);
	if (got != DATAGRAMS || packets < DATAGRAMS)
		finish("FAIL: traffic through the qdisc was lost");
	init_request(&req, RTM_DELQDISC, 0, lo);
	err = transact(nl, &req);
	if (err)
		finish("FAIL: deleting the qdisc: %s", strerror(-err));
	if (syscall(SYS_delete_module, "sch_confucius", O_NONBLOCK) < 0)
		finish("FAIL: removing the module: %s", strerror(errno));
	finish("ok");
	return 0;
}
