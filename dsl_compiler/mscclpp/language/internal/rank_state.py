"""What the compiler knows about one rank: threadblocks, channels, remote buffers, semaphores.

Ids are handed out in first-use order, exactly as plans number them: a rank's channels of one type
are numbered in creation order; a threadblock lists the channels and remote buffers it uses in the
order it first used them, and ops refer to those threadblock-local positions.
"""


class ThreadBlock:
    __slots__ = ("ops", "channels", "channel_index", "remote_buffers", "remote_index")

    def __init__(self):
        self.ops = []
        self.channels = {}  # channel type -> [rank-level channel id, ...] (first-use order)
        self.channel_index = {}  # (channel type, rank-level id) -> threadblock-local index
        self.remote_buffers = {}  # access channel type -> [rank-level remote buffer id, ...]
        self.remote_index = {}  # (access channel type, rank-level id) -> threadblock-local index

    def channel(self, channel_type, channel_id):
        key = (channel_type, channel_id)
        local = self.channel_index.get(key)
        if local is None:
            ids = self.channels.setdefault(channel_type, [])
            local = self.channel_index[key] = len(ids)
            ids.append(channel_id)
        return local

    def remote_buffer(self, access_type, buffer_id):
        key = (access_type, buffer_id)
        local = self.remote_index.get(key)
        if local is None:
            ids = self.remote_buffers.setdefault(access_type, [])
            local = self.remote_index[key] = len(ids)
            ids.append(buffer_id)
        return local


class RankState:
    __slots__ = (
        "rank",
        "input_chunks",
        "output_chunks",
        "scratch_chunks",
        "threadblocks",
        "channels",
        "peer_channels",
        "switch_channels",
        "remote_buffers",
        "semaphores",
        "barriers",
    )

    def __init__(self, rank, input_chunks, output_chunks):
        self.rank = rank
        self.input_chunks = input_chunks
        self.output_chunks = output_chunks
        self.scratch_chunks = 0
        self.threadblocks = []
        self.channels = {}  # "memory"/"port" -> [peer rank per channel id]
        # (channel type, peer rank) -> one entry per channel of that type to peer, the k-th at k: its
        # pairing records outside loops, ([signal locations], [wait locations]), None until it has any.
        self.peer_channels = {}
        self.switch_channels = []  # (buffer type char, [ranks]) per switch channel id
        self.remote_buffers = {}  # (peer rank, buffer char) -> [id, [access channel types]]
        self.semaphores = []  # initial values by semaphore id
        self.barriers = {}  # tuple(tb list) -> barrier id

    def tb(self, index):
        tbs = self.threadblocks
        if index >= len(tbs):
            tbs.extend(ThreadBlock() for _ in range(index + 1 - len(tbs)))
        return tbs[index]

    def add_channel(self, channel_type, peer):
        """(channel id, k): the new channel is the k-th of its type to peer (it pairs with the peer's
        k-th back)."""
        peers = self.channels.setdefault(channel_type, [])
        peers.append(peer)
        key = (channel_type, peer)
        records = self.peer_channels.get(key)
        if records is None:
            records = self.peer_channels[key] = []
        records.append(None)
        return len(peers) - 1, len(records) - 1

    def add_switch_channel(self, buffer, ranks):
        self.switch_channels.append((buffer, ranks))
        return len(self.switch_channels) - 1

    def remote_buffer(self, peer, buffer, access_type):
        key = (peer, buffer)
        entry = self.remote_buffers.get(key)
        if entry is None:
            entry = self.remote_buffers[key] = [len(self.remote_buffers), [access_type]]
        elif access_type not in entry[1]:
            entry[1].append(access_type)
        return entry[0]

    def barrier_id(self, tb_list):
        key = tuple(tb_list)
        bid = self.barriers.get(key)
        if bid is None:
            bid = self.barriers[key] = len(self.barriers)
        return bid

    def chunks(self, buffer):
        if buffer == "i":
            return self.input_chunks
        if buffer == "o":
            return self.output_chunks
        return self.scratch_chunks
