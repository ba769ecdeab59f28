# SPDX-License-Identifier: GPL-2.0-only
"""The hostile cases: for each, nbd-hostile.py's misbehaviour and what the
engine must do about it (fio's status, the messages, the time bound).
run-case.py checks the engine against them; fio-nbd-engine.py runs the
same misbehaviours against fio's built-in nbd engine.
"""

import os
import signal

# The engine's request/handshake timeout option, named in one place. Not
# "timeout": fio takes that name as an alias of its runtime option.
TIMEOUT_OPT = os.environ.get('HOSTILE_TIMEOUT_OPT', 'request_timeout')

# The engine's own options: another engine runs a case without them.
ENGINE_OPTS = ('structured_replies', 'handshake', 'conns', 'poll_us', TIMEOUT_OPT)

# What fio's output must contain: short, stable substrings of the engine's
# messages, in one table so they are easy to adjust to the final wording.
MSG = {
    'lost': 'connection 1 lost',
    'magic': 'bad reply magic',
    'cookie': 'unknown cookie',
    'unneg': 'not negotiated',
    'data': 'OFFSET_DATA chunk',
    'hole': 'OFFSET_HOLE chunk',
    'overlap': 'overlap',
    'large': 'too large',
    'malformed': 'malformed',
    'closed': 'server closed the connection',
    'noreply': 'no reply for 2 s',
    'timeout2': 'timeout=2',
    'partial': 'ended having sent only',
    'eio': 'Input/output error',
    'hs_deadline': 'the handshake did not finish within 2 s',
    'greeting': 'the greeting has the wrong magic',
    'info': 'malformed NBD_REP_INFO',
    'huge_reply': '4294967295-byte reply to',
    'reply_limit': '(limit 65536)',
    'hs_closed': 'closed the connection during the handshake',
    'empty': 'the export is empty',
    'poll_us': 'torus: poll_us',
    'timeout_opt': 'torus: ' + TIMEOUT_OPT,
}

READ = ['--rw=randread']
VERIFY = ['--rw=randwrite', '--verify=crc32c']


def case(server, status, msgs=(), absent=(), bound=15, fio=(), eng_timeout=None,
         after=0, signal_=None, must_fire=True, tcp=False, name_offset=False):
    """server: nbd-hostile.py --case; status: 'fail', 'ok' or 'any' (fio's
    exit status); msgs/absent: MSG keys that must / must not appear; bound:
    seconds fio may take (from the signal, for signal cases); fio: extra fio
    arguments (the default job is a 1 MiB 4 KiB randread); eng_timeout: the
    engine's timeout option; after: requests answered right first;
    signal_: sent to fio's main pid once the misbehaviour fired;
    must_fire: the server must report that the misbehaviour happened;
    name_offset: the output names the offset of the request it hit;
    tcp: connect over TCP 127.0.0.1 instead of the Unix socket."""
    return dict(server=server, status=status, msgs=list(msgs), absent=list(absent),
                bound=bound, fio=list(fio) or READ, eng_timeout=eng_timeout, after=after,
                signal=signal_, must_fire=must_fire, tcp=tcp,
                name_offset=name_offset)


LOST = ('lost',)
HS = dict(eng_timeout=2, bound=8)          # handshake stalls: 2 s deadline
CASES = {
    # A correct server first: the harness and the server are sound.
    'good': case('good', 'ok', fio=VERIFY, must_fire=False),
    'good-simple': case('good', 'ok', fio=VERIFY + ['--structured_replies=0'],
                        must_fire=False),
    'good-tcp': case('good', 'ok', fio=VERIFY, must_fire=False, tcp=True),
    'good-export-name': case('good', 'ok', fio=VERIFY + ['--handshake=export-name'],
                             must_fire=False),
    'good-conns2-qd16': case('good', 'ok', fio=VERIFY + ['--conns=2', '--iodepth=16'],
                             must_fire=False),
    # Transmission: connection-fatal violations.
    'bad-magic': case('bad-magic', 'fail', LOST + ('magic',)),
    'bad-magic-qd16': case('bad-magic', 'fail', LOST + ('magic',), after=40,
                           fio=READ + ['--iodepth=16']),
    'unknown-cookie': case('unknown-cookie', 'fail', LOST + ('cookie',)),
    'duplicate-reply': case('duplicate-reply', 'fail', LOST + ('cookie',), after=3),
    'truncated-close': case('truncated-close', 'fail', LOST + ('closed',)),
    'structured-unnegotiated': case('structured-unnegotiated', 'fail', LOST + ('unneg',)),
    'data-too-large': case('data-too-large', 'fail', LOST + ('data',)),
    'data-undersize': case('data-undersize', 'fail', LOST + ('data',)),
    'data-before': case('data-before', 'fail', LOST + ('data',)),
    'data-wrap': case('data-wrap', 'fail', LOST + ('data',)),
    'data-after': case('data-after', 'fail', LOST + ('data',)),
    'hole-before': case('hole-before', 'fail', LOST + ('hole',)),
    'hole-after': case('hole-after', 'fail', LOST + ('hole',)),
    'hole-wrap': case('hole-wrap', 'fail', LOST + ('hole',)),
    'hole-zero': case('hole-zero', 'fail', LOST + ('hole',)),
    'overlap': case('overlap', 'fail', LOST + ('overlap',)),
    'overlap-hole': case('overlap-hole', 'fail', LOST + ('overlap',)),
    'error-malformed': case('error-malformed', 'fail', LOST + ('malformed',)),
    'oversize-chunk': case('oversize-chunk', 'fail', LOST + ('large',)),
    # Transmission: the request fails, the connection stays.
    'done-no-data': case('done-no-data', 'fail', ('partial',), absent=LOST, name_offset=True),
    'half-data': case('half-data', 'fail', ('partial',), absent=LOST, name_offset=True),
    'error-chunk': case('error-chunk', 'fail', ('eio',), absent=LOST, after=5),
    # Transmission: legal but unusual.
    'reverse-chunks': case('reverse-chunks', 'ok', fio=VERIFY),
    # Replies out of order, and a read failed without its data, between
    # others: receives laid out in send order must notice and recover.
    'reorder': case('reorder', 'ok', fio=['--rw=randrw', '--verify=crc32c',
                                          '--structured_replies=0', '--iodepth=16',
                                          '--bsrange=4k-64k', '--size=8m']),
    'simple-error': case('simple-error', 'fail', ('eio',), absent=LOST, after=20,
                         fio=READ + ['--structured_replies=0', '--iodepth=16']),
    # Transmission: stalls, ended by the engine's timeout.
    'silent-first': case('silent', 'fail', ('noreply', 'timeout2'), eng_timeout=2, bound=8),
    'silent-nth': case('silent', 'fail', ('noreply', 'timeout2'), eng_timeout=2, bound=8,
                       after=20),
    'silent-qd8': case('silent', 'fail', ('noreply', 'timeout2'), eng_timeout=2, bound=8,
                       after=10, fio=READ + ['--iodepth=8']),
    'truncated-silence': case('truncated-silence', 'fail', ('noreply', 'timeout2'),
                              eng_timeout=2, bound=8),
    # Stalls ended by fio (no engine timeout): the end of runtime, SIGINT,
    # SIGTERM. Outstanding requests fail, so fio's status is non-zero.
    'runtime-silent': case('silent', 'fail', eng_timeout=0, bound=5,
                           fio=READ + ['--runtime=2', '--time_based']),
    'sigint-silent': case('silent', 'fail', eng_timeout=0, bound=3, signal_=signal.SIGINT),
    'sigterm-silent': case('silent', 'fail', eng_timeout=0, bound=3,
                           signal_=signal.SIGTERM),
    'sigint-hs-silent': case('hs-silent-option', 'fail', eng_timeout=0, bound=3,
                             signal_=signal.SIGINT),
    # Handshake.
    'bad-greeting': case('bad-greeting', 'fail', ('greeting',)),
    'bad-greeting2': case('bad-greeting2', 'fail', ('greeting',)),
    'bs-min0': case('bs-min0', 'fail', ('info',)),
    'bs-npow2': case('bs-npow2', 'fail', ('info',)),
    'bs-max-lt-min': case('bs-max-lt-min', 'fail', ('info',)),
    'size-zero': case('size-zero', 'fail', ('empty',)),
    'size-2e63': case('size-2e63', 'ok'),
    'hs-silent-accept': case('hs-silent-accept', 'fail', ('hs_deadline',), **HS),
    'hs-silent-greeting': case('hs-silent-greeting', 'fail', ('hs_deadline',), **HS),
    'hs-silent-flags': case('hs-silent-flags', 'fail', ('hs_deadline',), **HS),
    'hs-silent-option': case('hs-silent-option', 'fail', ('hs_deadline',), **HS),
    'hs-silent-mid-reply': case('hs-silent-mid-reply', 'fail', ('hs_deadline',), **HS),
    'hs-trickle': case('hs-trickle', 'fail', ('hs_deadline',), **HS),
    'hs-huge-reply': case('hs-huge-reply', 'fail', ('huge_reply', 'reply_limit')),
    'hs-accept-close': case('hs-accept-close', 'fail', ('hs_closed',)),
    # Busy-polling (poll_us): receives made by the spin itself, at QD1 and
    # QD2 where it applies; the same faults end it as end a sleeping wait.
    'poll-good': case('good', 'ok', fio=VERIFY + ['--poll_us=200'], must_fire=False),
    'poll-good-qd2-tcp': case('good', 'ok', must_fire=False, tcp=True,
                              fio=VERIFY + ['--poll_us=200', '--iodepth=2',
                                            '--bsrange=4k-256k']),
    'poll-reorder': case('reorder', 'ok', fio=['--rw=randrw', '--verify=crc32c',
                                               '--structured_replies=0', '--iodepth=2',
                                               '--bsrange=4k-64k', '--size=8m',
                                               '--poll_us=200']),
    'poll-bad-magic': case('bad-magic', 'fail', LOST + ('magic',),
                           fio=READ + ['--poll_us=200']),
    'poll-truncated-close': case('truncated-close', 'fail', LOST + ('closed',),
                                 fio=READ + ['--poll_us=200']),
    'poll-silent': case('silent', 'fail', ('noreply', 'timeout2'), eng_timeout=2, bound=8,
                        after=20, fio=READ + ['--poll_us=1000000']),
    # Out-of-range options are refused, naming the option.
    'opt-poll-us': case('good', 'fail', ('poll_us',), fio=READ + ['--poll_us=-1'],
                        must_fire=False),
    'opt-timeout': case('good', 'fail', ('timeout_opt',), eng_timeout=-1, must_fire=False),
}
