"""Mutations that the suite must catch: each breaks the code in one place,
and each test it names must then fail, printing EXPECT.

A mutation is one exact string replacement (OLD must occur once in FILE).
Add one for every bug a test claims to catch: the test is only as good as
the mutation that shows it failing.
"""

import collections

Mutation = collections.namedtuple("Mutation", "name why file old new tests expect")

MUTATIONS = [
    Mutation(
        name="runner-one-at-a-time",
        why="the plugin host drives every plugin one command at a time (no asynchronous requests)",
        file="bridges/runner/runner.c",
        old="\t.close = sess_close,\n\t.aio = &runner_aio_ops,\n",
        new="\t.close = sess_close,\n",
        tests=["tcmu-runner-host"],
        expect="fio at iodepth 32: the plugin held at most '1' commands at once",
    ),
    Mutation(
        name="runner-flush-missing-ok",
        why="a plugin without a flush callout reports a flush that never happened as done",
        file="shims/tcmu/scsi_reply.c",
        old="\tif (err == -EOPNOTSUPP) {\n\t\tr->error = EOPNOTSUPP;\n",
        new="\tif (err == -EOPNOTSUPP) {\n\t\tscsi_reply_good(r);\n\t\treturn;\n",
        tests=["tcmu-runner-host"],
        expect="fio succeeded but should have failed with: ILLEGAL REQUEST: invalid command operation code",
    ),
    Mutation(
        name="tcmu-check-condition-ok",
        why="the TCMU client takes a CHECK CONDITION for success",
        file="client/tcmu/tcmu_client_io.c",
        old="\tcase SCSI_STATUS_CHECK_CONDITION:\n",
        new="\tcase SCSI_STATUS_CHECK_CONDITION:\n\t\tbreak;\n",
        tests=["engine-tcmu"],
        expect="fio succeeded but should have failed with: flush of 0 bytes at offset 0: MEDIUM ERROR",
    ),
    Mutation(
        name="tcmu-nbd-greeting-unnamed",
        why="the TCMU client does not tell an NBD server's greeting from a bad reply",
        file="client/tcmu/tcmu_client_attach.c",
        old="\tif (nbd_decode_greeting(buf, TCMU_ATTACH_MAGIC_LEN, &oldstyle,\n\t\t\t\t&hflags) >= 0) {",
        new="\tif (0 && nbd_decode_greeting(buf, TCMU_ATTACH_MAGIC_LEN, &oldstyle,\n\t\t\t\t&hflags) >= 0) {",
        tests=["engine-wrong-transport"],
        expect="that socket speaks NBD (an NBD server's greeting), not TCMU",
    ),
    Mutation(
        name="nbd-tcmu-host-unnamed",
        why="the NBD client takes a TCMU handler host's hello for a bad greeting",
        file="client/nbd/nbd_connect.c",
        old="\t\telse if (hs.state == NBD_HS_MAGIC &&\n",
        new="\t\telse if (0 && hs.state == NBD_HS_MAGIC &&\n",
        tests=["engine-wrong-transport"],
        expect="that socket is a TCMU handler host (tcmu-shim), not an NBD server",
    ),
    Mutation(
        name="file-flush-noop",
        why="the file store's flush does nothing (no fdatasync)",
        file="storage/store_file.c",
        old="\treturn fdatasync(to_file(st)->fd) ? -errno : 0;\n",
        new="\treturn 0;\n",
        tests=["engine-crash-nbd", "engine-crash-tcmu"],
        expect="acknowledged writes that a completed flush (or FUA) covered are lost after the crash",
    ),
    Mutation(
        name="nbd-trim-not-sent",
        why="the NBD client completes a trim at once without sending it",
        file="client/nbd/nbd_send.c",
        old="\tcn->pending[cn->npending++] = s;\n\treturn 0;\n",
        new="\tif (type == NBD_CMD_TRIM) {\n\t\tcn->inflight++;\n\t\tnbdc_complete_slot(c, s, 0);\n"
            "\t\treturn 0;\n\t}\n\tcn->pending[cn->npending++] = s;\n\treturn 0;\n",
        tests=["engine-nbd-server", "engine-qemu-nbd", "jobs-run-embedded"],
        expect="trims did not reach",
    ),
    Mutation(
        name="tcmu-trim-not-sent",
        why="the TCMU transport completes a trim at once without sending it",
        file="engines/tcmu/tcmu_transport.c",
        old="\t\t.buf = buf,\n\t};\n\tsplit_init(&r->split, len);\n",
        new="\t\t.buf = buf,\n\t};\n\tsplit_init(&r->split, len);\n\tif (op == TORUS_OP_TRIM) {\n"
            "\t\tstop_sending(ts, r, 0);\n\t\treturn 0;\n\t}\n",
        tests=["engine-tcmu", "tcmu-fio-stores"],
        expect="do not read back as zeroes",
    ),
    Mutation(
        name="runner-offset-shift",
        why="the tcmu-runner plugin host moves every offset past 1 MiB by 64 KiB (qcow and every plugin)",
        file="bridges/runner/runner_aio.c",
        old="\t\t\t\t\ts->lib.iov_cnt, io->len, io->off);\n"
            "\t\treturn h->read(&r->dev, &s->cmd, s->lib.iovec, s->lib.iov_cnt,\n"
            "\t\t\t       io->len, io->off);\n",
        new="\t\t\t\t\ts->lib.iov_cnt, io->len,\n"
            "\t\t\t\t\tio->off + (io->off >= 1048576 ? 65536 : 0));\n"
            "\t\treturn h->read(&r->dev, &s->cmd, s->lib.iovec, s->lib.iov_cnt,\n"
            "\t\t\t       io->len, io->off + (io->off >= 1048576 ? 65536 : 0));\n",
        tests=["tcmu-fio-stores"],
        expect="what the job wrote is not where it wrote it",
    ),
    Mutation(
        name="nbd-store-thin-regardless",
        why="tcmu-shim offers thin provisioning before an NBD server without TRIM, and drops the trims",
        file="shims/tcmu/store.c",
        old="\tcaps->thin = store_can_trim(&cfg->store, st);\n",
        new="\tcaps->thin = true;\n",
        tests=["tcmu-nbd-notrim"],
        expect="a trim job through a server without TRIM: expected fio to exit 1",
    ),
    Mutation(
        name="tcmu-blocks-rotate",
        why="the TCMU submitter hands out data-area blocks from a hint that rotates through the whole area",
        file="proto/tcmu/tcmu_ring_sub.c",
        old="\tuint32_t w = st->blk_lo, got = 0;\n",
        new="\tuint32_t words = (s->nr_blks + 63) / 64, got = 0;\n"
            "\tstatic uint32_t hint;\n\tuint32_t w = hint % words;\n\n"
            "\tfor (; got < n; w = (w + 1) % words) {\n"
            "\t\tuint64_t avail = ~s->bitmap[w];\n\n"
            "\t\tif (w == s->nr_blks / 64)\n"
            "\t\t\tavail &= (1ull << (s->nr_blks % 64)) - 1;\n"
            "\t\tfor (; avail && got < n; avail &= avail - 1) {\n"
            "\t\t\ts->bitmap[w] |= avail & -avail;\n"
            "\t\t\tblks[got++] = w * 64 + __builtin_ctzll(avail);\n"
            "\t\t}\n\t}\n\thint = w;\n\tw = st->blk_lo;\n\tgot = n;\n",
        tests=["tcmu-ring-blocks"],
        expect="the data area is touched beyond what is in flight",
    ),
    Mutation(
        name="tcmu-shared-wrong-owner",
        why="on a shared TCMU ring, whoever reaps takes every completion as its own",
        file="client/tcmu/tcmu_shared_io.c",
        old="\to = &sh->st->owners[rec->owner];\n\ttop = ",
        new="\to = &sh->st->owners[sh->owner];\n\ttop = ",
        tests=["tcmu-shared-sub"],
        expect="0x6 != 0x3",
    ),
    Mutation(
        name="tcmu-shared-idle-spins",
        why="on a shared TCMU ring, a submitter with nothing out and no room returns busy at once (fio spins) instead of sleeping until room comes back",
        file="client/tcmu/tcmu_shared_io.c",
        old="\t\twait_room(sh->st, seen);\n",
        new="",
        tests=["tcmu-shared-sub"],
        expect="test_idle_sleeps_for_room",
    ),
    Mutation(
        name="tcmu-shared-spent-kept",
        why="on a shared TCMU ring, what an idle owner handled but has not released is kept from a submitter short of room",
        file="client/tcmu/tcmu_shared_io.c",
        old="\t\tif (rec_state(&sh->recs[id - 1]) == REC_SPENT) {\n",
        new="\t\tif (0) {\n",
        tests=["tcmu-shared-sub"],
        expect="test_idle_takes_spent",
    ),
    Mutation(
        name="tcmu-shared-wake-all",
        why="tcmu-shim wakes every submitter of a shared ring after each pass, not only those whose commands it completed",
        file="shims/tcmu/ring_loop.c",
        old="\t\tr->wake |= 1ull << (tag - 1);\n",
        new="\t\tr->wake_all = true;\n",
        tests=["tcmu-shared-ring"],
        expect="the host woke C, which has no command out",
    ),
    Mutation(
        name="tcmu-waiting-never-sent",
        why="the TCMU transport's requests that found no room are never sent while nothing is in flight (fio spins on getevents)",
        file="engines/tcmu/tcmu_transport.c",
        old="\tif (ts->waiting.head && !tcmu_client_inflight(ts->client))\n\t\tpush_waiting(ts);\n",
        new="",
        tests=["tcmu-shared-ring"],
        expect="four jobs on a ring with room for four commands did not finish within 60 s",
    ),
    Mutation(
        name="tcmu-shared-no-rebuild",
        why="a shared TCMU ring's state is taken as it is after a submitter died holding its lock halfway through queuing",
        file="client/tcmu/tcmu_shared.c",
        old="\t\tpthread_mutex_consistent(&st->lock);\n\t\trebuild(sh);\n",
        new="\t\tpthread_mutex_consistent(&st->lock);\n",
        tests=["tcmu-shared-sub"],
        expect="0x3d != 0x3f",
    ),
    Mutation(
        name="nbd-store-one-at-a-time",
        why="the nbd store offers no asynchronous requests: tcmu-shim waits for each command (queue depth 1)",
        file="bridges/store_nbd.c",
        old="\t.close = nbd_store_close,\n\t.aio = &nbd_aio_ops,\n",
        new="\t.close = nbd_store_close,\n",
        tests=["tcmu-nbd-pipeline"],
        expect="no 'ring N: M commands, at most D in flight to the store' line",
    ),
    Mutation(
        name="nbd-store-pieces-overlap",
        why="the nbd store sends every piece of a request to the request's first offset",
        file="bridges/store_nbd_io.c",
        old="\t\t\t\t       io->off + s->sent, len, buf, s);\n",
        new="\t\t\t\t       io->off, len, buf, s);\n",
        tests=["tcmu-nbd-pipeline"],
        expect="fio exited non-zero: fio --name=pieces",
    ),
    Mutation(
        name="transport-ignored-with-uri",
        why="a uri always picks its own transport: transport=libnbd with nbd+unix:// goes to the native one",
        file="engines/job_check.c",
        old="\t\tif (!transport_chosen(o))\n\t\t\ttp = torus_transport_for_uri(uri);\n",
        new="\t\ttp = torus_transport_for_uri(uri);\n",
        tests=["libnbd-errors"],
        expect="error message not found",
    ),
    Mutation(
        name="libnbd-tls-certificates-unset",
        why="transport=libnbd never hands tls_certificates= to libnbd",
        file="engines/libnbd/libnbd_setup.c",
        old="\t\tif (nbd_set_tls_certificates(h, o->tls_certificates) == -1)\n\t\t\tgoto libnbd_err;\n",
        new="",
        tests=["libnbd-errors"],
        expect="fio succeeded but should have failed with: nbds://localhost:",
    ),
    Mutation(
        name="libnbd-flush-not-sent",
        why="transport=libnbd completes a flush at once without sending NBD_CMD_FLUSH",
        file="engines/libnbd/libnbd_transport.c",
        old="\t\tsl->cookie = nbd_aio_flush(h, cb, 0);\n",
        new="\t\tslot_done(s, sl, 0);\n\t\treturn 0;\n",
        tests=["engine-crash-libnbd"],
        expect="acknowledged writes that a completed flush (or FUA) covered are lost after the crash",
    ),
    Mutation(
        name="libnbd-fua-dropped",
        why="transport=libnbd sends writes without FUA although fua=1 asked for it",
        file="engines/libnbd/libnbd_transport.c",
        old="\tuint32_t flags = sl->fua ? LIBNBD_CMD_FLAG_FUA : 0;\n",
        new="\tuint32_t flags = 0;\n",
        tests=["engine-crash-libnbd"],
        expect="FAIL: libnbd-fua: ",
    ),
    Mutation(
        name="nbd-conns-all-on-first",
        why="the native NBD client sends every request on its first connection, whatever conns= says",
        file="client/nbd/nbd_send.c",
        old="\t\tc->next_conn = (c->next_conn + 1) % c->nconns;\n",
        new="\t\tc->next_conn = 0;\n",
        tests=["engine-nbdkit"],
        expect="conns=4: reads and writes did not go over four connections",
    ),
    Mutation(
        name="pyrun-skip-passes",
        why="the Python test runner lets a test with a skipped case pass, as unittest alone does",
        file="tests/pyrun.py",
        old="        return 77\n",
        new="        return 0\n",
        tests=["meta-ci-skip"],
        expect="a Python test with a skipped case did not SKIP in meson",
    ),
    Mutation(
        name="tcmu-share-uncounted",
        why="the TCMU engine never counts the commands its completion work was for, so it never says the kernel's share",
        file="client/tcmu/tcmu_client_io.c",
        old="\t\tc->work.cmds += n;\n",
        new="",
        tests=["tcmu-kernel-share"],
        expect="not one kernel's share line",
    ),
    Mutation(
        name="timeline-clock-slow",
        why="the timeline's TSC clock runs 20% slow (a wrong rate): every phase is short",
        file="timeline/timeline_clock.c",
        old="\tc->mult = (uint64_t)(ns / ticks * 4294967296.0);\n",
        new="\tc->mult = (uint64_t)(0.80 * ns / ticks * 4294967296.0);\n",
        tests=["timeline-engine"],
        expect="total phase's read median: expected between 90% of fio's clat p50",
    ),
    Mutation(
        name="timeline-clock-fast",
        why="the timeline's TSC clock runs 13% fast: its stamps run ahead of the transport's clock_gettime() ones",
        file="timeline/timeline_clock.c",
        old="\tc->mult = (uint64_t)(ns / ticks * 4294967296.0);\n",
        new="\tc->mult = (uint64_t)(1.13 * ns / ticks * 4294967296.0);\n",
        tests=["timeline-engine"],
        expect="records with stamps missing or out of order: expected 0",
    ),
    Mutation(
        name="timeline-handed-late",
        why="the engine stamps handed 20 us after it hands the events to fio: the total outlasts fio's own latency",
        file="engines/engine.c",
        old="\t	now = torus_tl_now(d->tl);\n",
        new="\t	now = torus_tl_now(d->tl) + 20000;\n",
        tests=["timeline-engine"],
        expect="total phase's mean: expected at most 5% above fio's lat mean",
    ),
    Mutation(
        name="storage-includes-bridges",
        why="storage/ includes a header of bridges/, the layer above it (it still builds: the path is relative)",
        file="storage/blockio.c",
        old='#include "blockio.h"\n',
        new='#include "blockio.h"\n#include "../bridges/protocol_stores.h"\n',
        tests=["meta-layers"],
        expect='storage/blockio.c:6: #include "../bridges/protocol_stores.h": storage may not include bridges',
    ),
    Mutation(
        name="tcmu-write-protect-hidden",
        why="tcmu-shim does not report a read-only store as write protected (MODE SENSE's WP)",
        file="shims/tcmu/scsi_pages.c",
        old="MODE_DPOFUA | (t->write_protect ? MODE_WP : 0);",
        new="MODE_DPOFUA;",
        tests=["shim-read-only"],
        expect="error message not found",
    ),
    Mutation(
        name="nbd-read-only-hidden",
        why="nbd-shim does not advertise NBD_FLAG_READ_ONLY for a read-only store",
        file="shims/nbd/export.c",
        old="\t\te->extra_tflags |= NBD_FLAG_READ_ONLY;\n",
        new="\t\t;\n",
        tests=["shim-read-only"],
        expect="error message not found",
    ),
    Mutation(
        name="man-store-list-short",
        why="tcmu-shim.1's STORES section forgets a store of the registry",
        file="man/tcmu-shim.1",
        old=".TP\n.B null\n",
        new="",
        tests=["man-drift"],
        expect="a list of stores (memory, file:PATH[,direct][,ro]",
    ),
    Mutation(
        name="man-transport-undocumented",
        why="a transport of the engine's list that man/libtorus.7's EMBEDDED SERVERS does not name",
        file="man/libtorus.7",
        old=".TP\n.B transport=tcmu\n",
        new=".TP\n",
        tests=["man-drift"],
        expect="transport tcmu: not in man/libtorus.7's EMBEDDED SERVERS",
    ),
    Mutation(
        name="jobs-readme-kernel-path-missing",
        why="jobs/README.md's list of the kernel paths misses one of compare_paths.PATHS",
        file="jobs/README.md",
        old="(`kernel-loop`, `kernel-nbd`, `kernel-tcmu`,",
        new="(`kernel-loop`, `kernel-nbd`,",
        tests=["man-drift"],
        expect="compare path kernel-tcmu: in scripts/compare_paths.py's PATHS but not in jobs/README.md's list",
    ),
]


def by_name(name):
    for m in MUTATIONS:
        if m.name == name:
            return m
    raise KeyError(name)
