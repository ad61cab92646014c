"""AllToAll as a ring schedule on two threadblocks: tb0 sends to peers r+1, r+2, ... (put into the
peer's scratch, signal, release a semaphore); tb1 receives from r-1, r-2, ... (acquire, wait, copy
out of scratch). In place by default; ``inplace=False`` writes the output buffer, copies the own
block locally and drops the semaphores (the receive only needs the peer's signal).
``schedule="pairs"`` instead pairs the ranks up at every step (a round of disjoint pairs) and each
rank sends to and receives from its partner of the step."""
from mscclpp.language import AllToAll, Buffer, CollectiveProgram, MemoryChannel, Rank, Semaphore, SyncType


def build(
    name="alltoall_ring",
    num_gpus=8,
    num_threads_per_block=1024,
    min_message_size=0,
    max_message_size=2**64 - 1,
    instances=16,
    inplace=True,
    schedule="ring",
):
    n = num_gpus
    with CollectiveProgram(
        name,
        AllToAll(n, 1, inplace),
        n,
        instances=instances,
        num_threads_per_block=num_threads_per_block,
        min_message_size=min_message_size,
        max_message_size=max_message_size,
    ) as program:
        data, ready, semaphores, scratch = {}, {}, {}, {}
        for r in range(n):
            scratch[r] = Buffer(r, n - 1)
            for p in range(n):
                if p != r:
                    data[(r, p)] = MemoryChannel(p, r)
                    ready[(r, p)] = MemoryChannel(p, r)
                    if inplace:
                        semaphores[(r, p)] = Semaphore(r, initial_value=0)
        for r in range(n):
            for p in range(n):
                if p != r:
                    ready[(r, p)].signal(tb=0, relaxed=True)
            for p in range(n):
                if p != r:
                    ready[(r, p)].wait(tb=0, relaxed=True, data_sync=SyncType.after)
        slot = lambda of, at: of if of < at else of - 1  # noqa: E731
        if schedule == "ring":
            send_to = lambda r, step: (r + step) % n  # noqa: E731
            receive_from = lambda r, step: (r - step) % n  # noqa: E731
        else:
            rounds = pairing_rounds(n)
            send_to = receive_from = lambda r, step: rounds[step - 1][r]  # noqa: E731
        for r in range(n):
            inp = Rank(r).get_input_buffer()
            for step in range(1, n):
                p = send_to(r, step)
                at = slot(r, p)
                data[(r, p)].put(scratch[p][at : at + 1], inp[p : p + 1], tb=0)
                data[(r, p)].signal(tb=0, data_sync=SyncType.before)
                if inplace:
                    semaphores[(r, p)].release(tb=0)
            if not inplace:
                rank = Rank(r)
                rank.copy(rank.get_output_buffer()[r : r + 1], inp[r : r + 1], tb=0)
        for r in range(n):
            rank = Rank(r)
            target = rank.get_input_buffer() if inplace else rank.get_output_buffer()
            for step in range(1, n):
                p = receive_from(r, step)
                index = slot(p, r)
                if inplace:
                    semaphores[(r, p)].acquire(tb=1)
                data[(r, p)].wait(tb=1, data_sync=SyncType.after)
                rank.copy(target[p : p + 1], scratch[r][index : index + 1], tb=1)
    return program


def pairing_rounds(n):
    """n-1 rounds of disjoint pairs covering every pair once (n even), built greedily: in each round
    every still-unpaired rank, in order, takes the lowest higher rank it has not met yet.
    Returns [{rank: partner}] per round."""
    unmet = [set(range(n)) - {r} for r in range(n)]
    rounds = []
    for _ in range(n - 1):
        partner = {}
        for x in range(n):
            if x in partner:
                continue
            for y in range(x + 1, n):
                if y not in partner and y in unmet[x]:
                    partner[x], partner[y] = y, x
                    unmet[x].discard(y)
                    unmet[y].discard(x)
                    break
        rounds.append(partner)
    return rounds


if __name__ == "__main__":
    from example_args import run

    run(build)
