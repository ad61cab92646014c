"""Variable-size programs (AllToAllV, AllGatherV, ReduceScatterV): segments written as units.

A program of a variable-size collective is written like its fixed-size collective, one chunk per
segment: input chunk q of an AllToAllV rank is what it sends to rank q, output chunk q what it
receives from rank q; a scratch chunk is a slot of ``slot_bytes``. The compiler emits that program
as usual and then rewrites it into the variable-size plan format (docs/plan-format.md, "Variable
sizes"): every reference becomes a segment reference, placed and sized per call by the counts. A
scratch slot takes its length from the op's input or output segment, so each op that touches a
slot names one. The unit plan stays available for checking (``Collective.check``), since it is
the variable plan's model with every count equal.
"""
import json

from ..errors import DSLError

FORMAT_VERSION = 2


def segment_plan(plan):
    """The variable-size plan (a dict) of the unit plan ``plan`` (a dict, changed in place)."""
    name = plan["collective"]
    for gpu in plan["gpus"]:
        rank = gpu["id"]
        owners = [(rb["rank"], rb["type"]) for rb in gpu["remote_buffers"]]
        gpu["input_chunks"] = 1
        gpu["output_chunks"] = 1
        for tb in gpu["threadblocks"]:
            lists = {entry["access_channel_type"]: entry["remote_buffer_ids"] for entry in tb["remote_buffer_refs"]}
            for index, op in enumerate(tb["ops"]):
                _segment_op(op, rank, owners, lists, name, f"rank {rank} threadblock {tb['id']} op {index}")
    plan["format_version"] = FORMAT_VERSION
    plan["variable_sizes"] = {"parameters": "count_matrix", "slot_bytes": plan.pop("_slot_bytes")}
    return plan


def _length_key(name, sender, receiver):
    """The count-matrix entries equal for every binding: allgatherv sends one count per sender,
    reducescatterv receives one count per receiver."""
    if name == "allgatherv":
        return (sender, None)
    if name == "reducescatterv":
        return (None, receiver)
    return (sender, receiver)


def _slot_segment(name, key, rank, where, op_name):
    """A scratch slot's segment, from the executing rank's tables, for the length ``key``."""
    sender, receiver = key
    if name == "allgatherv":
        return {"table": "send", "peer": rank} if sender == rank else {"table": "recv", "peer": sender}
    if name == "reducescatterv":
        return {"table": "recv", "peer": rank} if receiver == rank else {"table": "send", "peer": receiver}
    if sender == rank:
        return {"table": "send", "peer": receiver}
    if receiver == rank:
        return {"table": "recv", "peer": sender}
    raise DSLError(
        f"{where} ({op_name}): rank {rank} cannot size a scratch slot holding what rank {sender} sends to rank "
        f"{receiver}: a slot's length comes from the executing rank's own counts"
    )


def _segment_op(op, rank, owners, lists, name, where):
    parts = {"i": name != "allgatherv", "o": name != "reducescatterv"}
    refs = []
    for key in ("src_buff", "dst_buff"):
        for ref in op.get(key, ()):
            if "switch_channel_id" in ref:
                raise DSLError(
                    f"{where} ({op['name']}): switch channels bind whole buffers, which a variable-size plan does "
                    "not have"
                )
            if "type" in ref:
                owner, buffer = rank, ref["type"]
            else:
                owner, buffer = owners[lists[op["channel_type"]][ref["buffer_id"]]]
            if ref.get("size") != 1:
                raise DSLError(
                    f"{where} ({op['name']}): a reference of {ref.get('size')} chunks spans several segments; a "
                    "variable-size op moves one segment per reference"
                )
            refs.append((ref, owner, buffer))
    key = None
    for ref, owner, buffer in refs:
        if buffer == "s":
            continue
        # An input or output segment, seen from its owner: the send table places the input, the
        # recv table the output; a shared segment (allgatherv's input, reducescatterv's output)
        # is the owner's own entry.
        peer = ref["index"] if parts[buffer] else owner
        table = "send" if buffer == "i" else "recv"
        ref["index"] = 0
        ref["segment"] = {"table": table, "peer": peer}
        if key is None:
            sender, receiver = (owner, peer) if table == "send" else (peer, owner)
            key = _length_key(name, sender, receiver)
    for ref, owner, buffer in refs:
        if buffer != "s":
            continue
        if key is None:
            raise DSLError(
                f"{where} ({op['name']}): an op on scratch slots only cannot tell their length; name the input "
                "or output segment the slot holds in the same op"
            )
        ref["segment"] = _slot_segment(name, key, rank, where, op["name"])


def variable_plan_json(text, slot_bytes):
    """The compact JSON of the variable-size plan for the unit plan's compact JSON ``text``."""
    plan = json.loads(text)
    plan["_slot_bytes"] = slot_bytes
    return json.dumps(segment_plan(plan), separators=(",", ":"))
