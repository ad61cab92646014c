"""Signal/wait pairing, checked channel by channel.

The k-th channel of a type from rank A to rank B pairs with the k-th channel of that type from B
to A: a signal on one increments the counter the other waits on. So every (sender, receiver,
channel type, channel index) must see as many signals on the sender's side as waits on the
receiver's, and inside pipeline loops the counts are compared per loop shape (unit, chunks), since
a loop body runs a size-dependent number of times.
"""
from ..errors import DSLError, warn_at


def source_location(location):
    """(filename, line) of a recorded (code object, instruction offset)."""
    code, offset = location
    for start, end, line in code.co_lines():
        if start <= offset < end and line is not None:
            return (code.co_filename, line)
    return (code.co_filename, code.co_firstlineno)


def _loop_text(loop):
    return "" if loop is None else f" inside pipeline loops (unit {loop[0]}, {loop[1]} chunk(s))"


def check_pairing(ranks, order, loop_records):
    """order: (rank, peer, channel type, k, loop key) of every channel's records, in the order they
    were first made, for the rank's k-th channel of that type to peer (RankState.add_channel numbers
    them); the records, (signal locations, wait locations), are in RankState.peer_channels outside
    loops (loop key None) and in loop_records under that key inside them.

    Raises DSLError for the mismatch whose first unmatched call comes earliest in the source. A
    mismatch MSCCL++'s compiler accepts, because it only compares the totals of each (rank, peer,
    channel type), is a DSLWarning instead (one per rank pair and type): the plan is written, but a
    signal on one channel never satisfies a wait on another, so it would hang where they differ.
    """
    empty = ((), ())
    problems = []
    partner_records = loop_records.get
    # Records outside loops that all balance raise nothing: then only the loops' are walked.
    balanced = _balanced_outside_loops(ranks)
    for key in loop_records if balanced else order:
        rank, peer, ctype, k, loop = key
        if loop is None:
            signals, waits = ranks[rank].peer_channels[(ctype, peer)][k]
            theirs = ranks[peer].peer_channels.get((ctype, rank), ())
            exists = k < len(theirs)  # whether the peer has the partner channel
            partner = theirs[k] if exists else None
        else:
            signals, waits = loop_records[key]
            partner = partner_records((peer, rank, ctype, k, loop))
            exists = partner is not None or k < len(ranks[peer].peer_channels.get((ctype, rank), ()))
        if partner is None:
            if not exists:
                location = (signals or waits)[0]
                what = "signal" if signals else "wait"
                problems.append(
                    (
                        location,
                        f"{what} on rank {rank}'s {ctype} channel #{k} to rank {peer} cannot pair: rank {peer} has no "
                        f"{ctype} channel #{k} to rank {rank} (channels pair by order: the k-th from A to B with the "
                        f"k-th from B to A)",
                        None,
                    )
                )
                continue
            partner = empty
        peer_signals, peer_waits = partner
        if len(signals) > len(peer_waits):
            problems.append(
                (
                    signals[len(peer_waits)],
                    f"signal without a matching wait: rank {rank} signals {len(signals)} time(s) on its {ctype} "
                    f"channel #{k} to rank {peer}, but rank {peer} waits {len(peer_waits)} time(s) on its {ctype} "
                    f"channel #{k} from rank {rank}{_loop_text(loop)}",
                    (rank, peer, ctype, loop),
                )
            )
        elif len(waits) > len(peer_signals):
            problems.append(
                (
                    waits[len(peer_signals)],
                    f"wait without a matching signal: rank {rank} waits {len(waits)} time(s) on its {ctype} "
                    f"channel #{k} from rank {peer}, but rank {peer} signals {len(peer_signals)} time(s) on its "
                    f"{ctype} channel #{k} to rank {rank}{_loop_text(loop)}",
                    (rank, peer, ctype, loop),
                )
            )
    if not problems:
        return
    totals = _totals(ranks, order, loop_records)
    errors, warnings = [], {}
    for location, message, group in problems:
        if group is not None and _balanced(totals, group):
            pair = (min(group[0], group[1]), max(group[0], group[1]), group[2], group[3])
            warnings.setdefault(pair, []).append((source_location(location), message))
        else:
            errors.append((source_location(location), message))
    if errors:
        location, message = min(errors, key=lambda item: item[0])
        raise DSLError(message, location)
    for pair in sorted(warnings, key=lambda p: min(warnings[p])):
        location, message = min(warnings[pair])
        warn_at(
            f"{message}; the signals and waits between these ranks balance only in total (MSCCL++'s own check), "
            "so the plan is written, but it hangs where a wait's channel gets no signal",
            location,
        )


def _balanced_outside_loops(ranks):
    """Whether every channel's records outside loops match its partner's: as many signals as the
    partner waits and as many waits as it signals. Then none of them is a problem; this answers
    with a pass over the channels of each rank pair, without the checks that name the mismatch."""
    for state in ranks:
        rank = state.rank
        for (ctype, peer), mine in state.peer_channels.items():
            theirs = ranks[peer].peer_channels.get((ctype, rank))
            if theirs is None:
                if mine.count(None) != len(mine):
                    return False
                continue
            if peer < rank:
                continue  # the peer's pass compared this pair
            for a, b in zip(mine, theirs):
                if a is not b and (a is None or b is None or len(a[0]) != len(b[1]) or len(a[1]) != len(b[0])):
                    return False
            extra = mine[len(theirs) :] if len(mine) > len(theirs) else theirs[len(mine) :]
            if extra.count(None) != len(extra):
                return False
    return True


def _totals(ranks, order, loop_records):
    """(rank, peer, channel type, loop key) -> [signals rank sends to peer, waits rank does for peer]."""
    totals = {}
    for key in order:
        rank, peer, ctype, k, loop = key
        signals, waits = ranks[rank].peer_channels[(ctype, peer)][k] if loop is None else loop_records[key]
        entry = totals.setdefault((rank, peer, ctype, loop), [0, 0])
        entry[0] += len(signals)
        entry[1] += len(waits)
    return totals


def _balanced(totals, group):
    """Whether, between group's two ranks, each one's signals equal the other's waits in total."""
    rank, peer, ctype, loop = group
    mine = totals.get((rank, peer, ctype, loop), (0, 0))
    theirs = totals.get((peer, rank, ctype, loop), (0, 0))
    return mine[0] == theirs[1] and mine[1] == theirs[0]
