"""AllToAll in place through scratch: threadblock j of rank r serves its j-th peer p: put block p of
the input into p's scratch and signal; wait for p's block and copy it from scratch into place.
With ``pipelined=True`` the transfer runs as a 512 KiB-step pipeline, with the receive on its own
threadblock chained by a semaphore."""
from mscclpp.language import (
    AllToAll,
    Buffer,
    CollectiveProgram,
    LoopIterationContext,
    MemoryChannel,
    Rank,
    Semaphore,
    SyncType,
)


def build(
    name="alltoall",
    num_gpus=8,
    num_threads_per_block=1024,
    min_message_size=0,
    max_message_size=2**64 - 1,
    instances=2,
    pipelined=False,
):
    n = num_gpus
    with CollectiveProgram(
        name,
        AllToAll(n, 1, True),
        n,
        instances=instances,
        num_threads_per_block=num_threads_per_block,
        min_message_size=min_message_size,
        max_message_size=max_message_size,
    ) as program:
        data, ready, semaphores, scratch = {}, {}, {}, {}
        for r in range(n):
            scratch[r] = Buffer(r, n - 1)
            if pipelined:
                for j in range(n):
                    semaphores[(r, j)] = Semaphore(r, initial_value=0)
            for p in range(n):
                if p != r:
                    data[(r, p)] = MemoryChannel(p, r)
                    if pipelined:
                        ready[(r, p)] = MemoryChannel(p, r)
        sync_channels = ready if pipelined else data
        slot = lambda of, at: of if of < at else of - 1  # noqa: E731  (position of rank `of` among `at`'s peers)
        for r in range(n):
            for p in range(n):
                if p != r:
                    sync_channels[(r, p)].signal(tb=slot(p, r), relaxed=True)
            for p in range(n):
                if p != r:
                    sync_channels[(r, p)].wait(tb=slot(p, r), relaxed=True, data_sync=SyncType.after)
        if pipelined:
            with LoopIterationContext(unit=2**19, num_chunks=1):
                _exchange(n, data, scratch, semaphores, slot, receive_tb_offset=n - 1)
        else:
            _exchange(n, data, scratch, None, slot, receive_tb_offset=0)
    return program


def _exchange(n, data, scratch, semaphores, slot, receive_tb_offset):
    for r in range(n):
        inp = Rank(r).get_input_buffer()
        for p in range(n):
            if p != r:
                tb = slot(p, r)
                at = slot(r, p)
                data[(r, p)].put(scratch[p][at : at + 1], inp[p : p + 1], tb=tb)
                data[(r, p)].signal(tb=tb, data_sync=SyncType.before)
                if semaphores is not None:
                    semaphores[(r, tb)].release(tb=tb)
    for r in range(n):
        rank = Rank(r)
        inp = rank.get_input_buffer()
        for p in range(n):
            if p != r:
                index = slot(p, r)
                tb = receive_tb_offset + index
                if semaphores is not None:
                    semaphores[(r, index)].acquire(tb=tb)
                data[(r, p)].wait(tb=tb, data_sync=SyncType.after)
                rank.copy(inp[p : p + 1], scratch[r][index : index + 1], tb=tb)


if __name__ == "__main__":
    from example_args import run

    run(build)
