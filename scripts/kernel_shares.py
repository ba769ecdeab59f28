"""The TCMU engine's kernel's shares (docs/tcmu.md): the work it does in
fio's thread that the kernel does elsewhere, said once per job at close
(engines/tcmu/tcmu_transport.c): the submission share (a command put in
the ring, a kworker's in the kernel) and the completion share
(completions walked and reads copied out, inside the handler's notify
write() in the kernel). Their lines, their figures' names in compare's
results, and what each is, in one place for compare's table and its
timeline."""

import re

# each side's line, as the engine prints it
LINES = {
    "submission": re.compile(r"torus: tcmu: the kernel's submission share: (\d+) ns per "
                             r"command over (\d+) commands"),
    "completion": re.compile(r"torus: tcmu: the kernel's completion share: (\d+) ns per "
                             r"command over (\d+) commands"),
}
# each side's figure in compare's results (µs per I/O)
KEYS = {side: f"kernel_{side}_share_us_per_io" for side in LINES}
# what each side is, and where the kernel does it
WORDS = {
    "submission": "taking a cmd_id and data blocks, building the ring entry and CDB, copying "
                  "a write's data in, publishing cmd_head, waking the handler: the kernel does "
                  "this in a kworker (target_queued_submit_work → tcmu_queue_cmd → "
                  "queue_cmd_ring; tcmu_unplug_device → uio_event_notify)",
    "completion": "finding completions, copying reads out, freeing blocks and cmd_ids, "
                  "handing each on: the kernel does this inside the handler's notify write() "
                  "(tcmu_irqcontrol → tcmu_handle_completions) and charges it to the handler, "
                  "queueing the rest of each completion for a kworker (target_complete_cmd)",
}


def per_io(text, ios, side):
    """The work of SIDE from the engine's lines (one per job) in fio's
    TEXT, as microseconds per I/O of IOS; None when no job said it (paths
    without one)."""
    found = [(int(ns), int(n)) for ns, n in LINES[side].findall(text)]
    if not found or not ios:
        return None
    return sum(ns * n for ns, n in found) / 1000.0 / ios


def figures(text, ios):
    """Both sides' per_io() under their KEYS."""
    return {KEYS[side]: per_io(text, ios, side) for side in LINES}
