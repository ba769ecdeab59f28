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
        name="tcmu-check-condition-ok",
        why="the TCMU client takes a CHECK CONDITION for success",
        file="client/tcmu/tcmu_client.c",
        old="\tcase SCSI_STATUS_CHECK_CONDITION:\n",
        new="\tcase SCSI_STATUS_CHECK_CONDITION:\n\t\tbreak;\n",
        tests=["engine-tcmu"],
        expect="fio succeeded but should have failed with: flush of 0 bytes at offset 0: MEDIUM ERROR",
    ),
    Mutation(
        name="file-flush-noop",
        why="the file store's flush does nothing (no fdatasync)",
        file="storage/backend_file.c",
        old="\treturn fdatasync(to_file(be)->fd) ? -errno : 0;\n",
        new="\treturn 0;\n",
        tests=["engine-crash-nbd", "engine-crash-tcmu"],
        expect="acknowledged writes that a completed flush (or FUA) covered are lost after the crash",
    ),
]


def by_name(name):
    for m in MUTATIONS:
        if m.name == name:
            return m
    raise KeyError(name)
