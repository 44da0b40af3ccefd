"""Reading a node's own log back at start, so a node restarted after a crash (or a clean
stop) comes back with the State it had.

Only a master writes the log, so a node that followed another master's session since it
last led one holds a stale log: it notes the session it follows (`FOLLOWING_FILE`), and a
log of another session is not restored (the node syncs from the cluster instead).

The log holds the last master session this node led: a snapshot, then the events after
it. Replaying them gives that session's State. What died with the old process is left
out: runner statuses of this node (its runners are gone) and unfinished tasks (their
streams are gone). The instances stay, so the worker starts their runners again.
"""

from dataclasses import dataclass
from pathlib import Path

from loguru import logger

from skulk.durable_files import write_file_atomically
from skulk.master.event_log_archive import newest_archive, read_archive_bytes
from skulk.master.event_log_records import decode_log
from skulk.shared.apply import apply
from skulk.shared.types.events import IndexedEvent, StateSnapshotHydrated
from skulk.shared.types.ids import NodeId, SessionId
from skulk.shared.types.state import State
from skulk.shared.types.tasks import TERMINAL_TASK_STATUSES


@dataclass(frozen=True)
class RestoredState:
    state: State
    session: SessionId
    master_node: NodeId
    events: int
    corrupt: int


def replay(events: list[IndexedEvent]) -> tuple[State, int] | None:
    """The State the events of one session lead to, and how many were skipped (out of
    order after a damaged record); None when there is nothing to replay."""
    if not events:
        return None
    session = events[-1].session
    state = State()
    skipped = 0
    for indexed in events:
        if indexed.session != session:
            skipped += 1
        elif isinstance(indexed.event, StateSnapshotHydrated):
            state = apply(state, indexed)
        elif indexed.index == state.last_event_applied_idx + 1:
            state = apply(state, indexed)
        else:
            skipped += 1
    return state, skipped


def without_the_dead(state: State, node_id: NodeId) -> State:
    """`state` less what a restart of `node_id` ended: its runners and unfinished tasks."""
    own_runners = {runner_id for instance in state.instances.values()
                   for runner_id, shard in instance.shards.items() if shard.node_id == node_id}
    return state.model_copy(update={
        "runners": {r: s for r, s in state.runners.items() if r not in own_runners},
        "tasks": {t: task for t, task in state.tasks.items()
                  if task.status in TERMINAL_TASK_STATUSES}})


FOLLOWING_FILE = "following"


def note_followed_session(directory: Path, session: SessionId) -> None:
    """Record the session this node's replica follows now."""
    path = directory / FOLLOWING_FILE
    if not path.exists() or path.read_text().strip() != session:
        write_file_atomically(path, f"{session}\n".encode())


def restore_from_log(directory: Path, node_id: NodeId) -> RestoredState | None:
    """The State of the newest session in this node's log (the previous run's log is the
    newest archive once the log has opened), if that is the session it followed last."""
    path = newest_archive(directory)
    if path is None:
        return None
    try:
        decoded = decode_log(read_archive_bytes(path))
    except OSError as error:
        logger.error("could not read the event log {} back: {}", path, error)
        return None
    replayed = replay(decoded.events)
    if replayed is None:
        return None
    state, skipped = replayed
    last = decoded.events[-1]
    following = directory / FOLLOWING_FILE
    if following.exists() and following.read_text().strip() != last.session:
        logger.info("the log holds session {}, but this node followed {} since: not "
                    "restored, the cluster has newer history", last.session,
                    following.read_text().strip())
        return None
    corrupt = decoded.corrupt + skipped
    if corrupt:
        logger.warning("the event log {} had {} damaged or out-of-order record(s); they "
                       "were skipped", path.name, corrupt)
    logger.info("restored the State of session {} from the log: {} instance(s), event {}",
                last.session, len(state.instances), state.last_event_applied_idx)
    return RestoredState(state=without_the_dead(state, node_id), session=last.session,
                         master_node=last.master_node, events=len(decoded.events),
                         corrupt=corrupt)
