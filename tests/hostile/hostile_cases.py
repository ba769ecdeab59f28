# SPDX-License-Identifier: GPL-2.0-only
"""The hostile cases: for each, nbd-hostile.py's misbehaviour and what the
engine must do about it (fio's status, the messages, the time bound).
run-case.py checks the engine against them, with the native transport or
with transport=libnbd (LIBNBD_MSG, LIBNBD_DIFF: what differs there, and
why); fio-nbd-engine.py runs the same misbehaviours against fio's
built-in nbd engine.
"""

import os
import signal

# The engine's request/handshake timeout option, named in one place. Not
# "timeout": fio takes that name as an alias of its runtime option.
TIMEOUT_OPT = os.environ.get('HOSTILE_TIMEOUT_OPT', 'request_timeout')

# The engine's own options: another engine runs a case without them.
ENGINE_OPTS = ('structured_replies', 'handshake', 'conns', 'poll_us', TIMEOUT_OPT)
# The native transport's own: transport=libnbd runs a case without them,
# and leaves out the cases of their checks (MSG keys).
NATIVE_OPTS = ('structured_replies', 'handshake', 'poll_us')
NATIVE_OPT_MSGS = ('poll_us',)

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
    'stopping': 'requests still outstanding as the job stops; they fail with Operation canceled',
}

# The same keys with transport=libnbd: a protocol error is libnbd's own
# message (libnbd 1.14's wording), inside the transport's line; stalls,
# stops and option checks are the transport's or the glue's words.
LIBNBD_MSG = {
    # The transport's line when libnbd gives a connection up.
    'lost': 'connection 1: libnbd:',
    'magic': 'invalid reply magic',
    'cookie': 'no matching cookie found for server reply',
    'unneg': 'server sent unexpected structured reply',
    # libnbd says the same of a data and a hole chunk outside the read.
    'data': 'range of structured reply is out of bounds',
    'hole': 'range of structured reply is out of bounds',
    'data_short': 'too short length in NBD_REPLY_TYPE_OFFSET_DATA',
    'hole_zero': 'OFFSET_HOLE chunk of 0 bytes',
    'overlap': 'overlap',
    'large': 'error payload length too large',
    'malformed': 'error message length too large',
    'closed': 'server disconnected unexpectedly',
    'simple_read': 'unexpected simple reply for read',
    'noreply': 'no reply for 2 s',
    'timeout2': 'timeout=2',
    'partial': 'ended having sent only',
    'eio': 'Input/output error',
    'hs_deadline': 'handshake did not finish within 2 s',
    'greeting': 'server did not send expected NBD magic',
    'greeting2': 'server is not either an oldstyle or fixed newstyle NBD server',
    'huge_reply': 'invalid NBD_REP_ACK option reply length',
    # The transport's words: libnbd's own vary with the moment the server
    # closes (recv: server disconnected unexpectedly; now and then, under
    # load, an event invalid in state CONNECT.START).
    'hs_closed': 'libnbd could not connect: ',
    'empty': 'the export is empty',
    'timeout_opt': 'torus: ' + TIMEOUT_OPT,
    'stopping': 'requests still outstanding as the job stops; they fail with Operation canceled',
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
    'runtime-silent': case('silent', 'fail', ('stopping',), eng_timeout=0, bound=5,
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


# transport=libnbd: where a case's expectation differs from the native
# transport's (status, bound or which messages), the change and why. Every
# other case expects the same, in LIBNBD_MSG's words. Run without
# NATIVE_OPTS; a case that is then another case is left out.
LIBNBD_DIFF = {
    'data-undersize': (dict(msgs=LOST + ('data_short',)),
                       'libnbd names the chunk\'s length, not its place'),
    'hole-zero': (dict(msgs=('hole_zero',), absent=LOST),
                  'libnbd passes a hole of 0 bytes on; the transport fails the read, '
                  'the connection stays'),
    'overlap': (dict(msgs=('overlap',), absent=LOST),
                'libnbd does not check chunks against each other; the transport fails '
                'the read, the connection stays'),
    'overlap-hole': (dict(msgs=('overlap',), absent=LOST),
                     'libnbd does not check chunks against each other; the transport '
                     'fails the read, the connection stays'),
    'simple-error': (dict(msgs=LOST + ('simple_read', 'eio'), absent=()),
                     'libnbd always negotiates structured replies and takes a simple '
                     'reply to a read as a protocol error: the connection is dropped'),
    'bad-greeting2': (dict(msgs=('greeting2',)),
                      'libnbd words a wrong second magic differently'),
    'bs-min0': (dict(status='ok', msgs=()),
                'libnbd 1.14 drops a malformed NBD_INFO_BLOCK_SIZE and reports none, '
                'so the transport cannot tell: the job runs with the defaults'),
    'bs-npow2': (dict(status='ok', msgs=()),
                 'libnbd 1.14 drops a malformed NBD_INFO_BLOCK_SIZE and reports none, '
                 'so the transport cannot tell: the job runs with the defaults'),
    'bs-max-lt-min': (dict(status='ok', msgs=()),
                      'libnbd 1.14 drops a malformed NBD_INFO_BLOCK_SIZE and reports '
                      'none, so the transport cannot tell: the job runs with the defaults'),
    'hs-huge-reply': (dict(msgs=('huge_reply',)),
                      'libnbd names neither the length nor a limit'),
}

# The cases meson's hostile-libnbd suite runs (CI's time: each case is a
# test and a python start): every outcome, every family (handshake, reply
# framing, data, stalls, fio's stops and signals, options) and every
# documented difference but the repeated ones. run-case.py --transport
# libnbd --table runs them all.
LIBNBD_SUITE = (
    'good', 'good-conns2-qd16', 'reverse-chunks', 'reorder', 'size-2e63',
    'bad-magic-qd16', 'unknown-cookie', 'truncated-close', 'structured-unnegotiated',
    'error-malformed',
    'data-wrap', 'data-undersize', 'hole-zero', 'overlap', 'done-no-data', 'half-data',
    'error-chunk', 'simple-error',
    'silent-qd8', 'runtime-silent', 'sigint-silent', 'sigint-hs-silent',
    'hs-silent-option', 'bad-greeting2', 'bs-min0', 'size-zero', 'hs-huge-reply',
    'hs-accept-close', 'opt-timeout',
)


def strip(c, opts):
    """Case C without the options OPTS in its job."""
    c = dict(c)
    c['fio'] = [a for a in c['fio']
                if not (a.startswith('--') and a[2:].split('=', 1)[0] in opts)]
    return c


def libnbd_cases():
    """The cases transport=libnbd runs, in table order: each stripped of
    NATIVE_OPTS and changed by LIBNBD_DIFF, with 'reason' (None where it
    expects what the native transport does). Left out: the cases of the
    native transport's own options, and those that are another case once
    stripped (poll-good is good). Returns (cases, left_out) where left_out
    maps a name to why."""
    out, left, seen = {}, {}, {}
    for name, c in CASES.items():
        if set(c['msgs']) & set(NATIVE_OPT_MSGS):
            left[name] = 'tests an option of the native transport'
            continue
        c = strip(c, NATIVE_OPTS)
        key = (c['server'], c['after'], tuple(c['fio']), c['signal'], c['tcp'],
               c['eng_timeout'])
        if key in seen:
            left[name] = f'the same run as {seen[key]} without the native options'
            continue
        seen[key] = name
        change, reason = LIBNBD_DIFF.get(name, ({}, None))
        c.update({k: list(v) if isinstance(v, tuple) else v for k, v in change.items()})
        c['reason'] = reason
        out[name] = c
    return out, left
