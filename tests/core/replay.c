// SPDX-License-Identifier: MIT
/*
 * Replays fuzz corpus directories through the core without libFuzzer, so the corpus runs
 * wherever a C compiler does (the armhf and mips builds of mk/cross.mk, under qemu-user).
 * Prints how many inputs ran and one digest of their outcomes (ops.h); the digest does
 * not depend on the order the directory lists its files, and must equal the build
 * machine's. Exits 1 on a broken invariant, naming the input; 2 on an unreadable or
 * empty corpus.
 */
/* 64-bit inode numbers and directory offsets on 32-bit hosts: readdir fails without. */
#define _FILE_OFFSET_BITS 64
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"

#define MAX_INPUT (1u << 20)

struct tally {
	unsigned long inputs;
	u64 digest;
	u8 *buf;
};

/* 0 when the input ran clean, 1 when it broke an invariant, 2 when it cannot be read. */
static int replay_file(struct tally *t, const char *path)
{
	FILE *f = fopen(path, "rb");
	const char *err;
	size_t size;
	u64 outcome;

	if (!f) {
		perror(path);
		return 2;
	}
	size = fread(t->buf, 1, MAX_INPUT, f);
	fclose(f);
	if (size == MAX_INPUT) {
		fprintf(stderr, "%s: larger than %u bytes\n", path, MAX_INPUT);
		return 2;
	}
	err = ts_run_ops(t->buf, size, &outcome);
	if (err) {
		fprintf(stderr, "%s: invariant broken: %s\n", path, err);
		return 1;
	}
	t->inputs++;
	t->digest += outcome;	/* a sum: independent of the listing order */
	return 0;
}

static int replay_dir(struct tally *t, const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int worst = 0;

	if (!d) {
		perror(dir);
		return 2;
	}
	for (errno = 0; (e = readdir(d)); errno = 0) {
		char path[4096];
		int rc;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		rc = replay_file(t, path);
		if (rc > worst)
			worst = rc;
	}
	if (errno) {
		perror(dir);
		worst = 2;
	}
	closedir(d);
	return worst;
}

int main(int argc, char **argv)
{
	struct tally t = { 0, 0, malloc(MAX_INPUT) };
	int i, worst = 0;

	if (argc < 2 || !t.buf) {
		fprintf(stderr, "usage: %s CORPUS-DIR...\n", argv[0]);
		return 2;
	}
	for (i = 1; i < argc; i++) {
		int rc = replay_dir(&t, argv[i]);

		if (rc > worst)
			worst = rc;
	}
	free(t.buf);
	if (!t.inputs) {
		fprintf(stderr, "no input in the corpus\n");
		worst = 2;
	}
	printf("fuzz corpus: %lu inputs replayed, outcome digest %016llx\n",
	       t.inputs, (unsigned long long)t.digest);
	return worst;
}
