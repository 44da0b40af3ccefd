"""The decoding batch's KV, held as one batch cache per micro-batch.

With one micro-batch (the default, and always on one node) this is the one batch cache
the loop has always had. A pipeline that keeps its ranks busy holds as many micro-batches
as it has ranks: in a decode step the first rank runs micro-batch k+1 while the next
rank runs micro-batch k, instead of each rank waiting for the whole batch to pass the
other. A row keeps its micro-batch for its whole stay (its KV lives there), and a joining
row goes to the smallest one. Rows are numbered in the loop's row order.
"""

from dataclasses import dataclass, field

from skulk.worker.engines.mlx import mlx_api


@dataclass
class BatchCaches:
    """Per micro-batch, the cache of its rows; `members[i]` is row i's micro-batch."""

    micro_batches: int = 1
    caches: list[list[mlx_api.LayerCache] | None] = field(init=False)
    members: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.micro_batches < 1:
            raise ValueError("a batch has at least one micro-batch")
        self.caches = [None] * self.micro_batches

    @property
    def rows(self) -> int:
        return len(self.members)

    def _local(self, row: int) -> tuple[int, int]:
        """(micro-batch, index within its cache) of a row."""
        group = self.members[row]
        return group, self.members[:row].count(group)

    def add(self, cache: list[mlx_api.LayerCache]) -> None:
        """A prefilled one-row cache joins as the last row, in the smallest micro-batch."""
        sizes = [self.members.count(g) for g in range(self.micro_batches)]
        group = sizes.index(min(sizes))
        held = self.caches[group]
        if held is None:
            self.caches[group] = cache
        else:
            mlx_api.append_rows(held, cache)
        self.members.append(group)

    def extract(self, row: int) -> mlx_api.RowKv:
        """A copy of one row's KV (for the prefix cache)."""
        group, local = self._local(row)
        held = self.caches[group]
        assert held is not None
        return mlx_api.extract_row(held, local)

    def keep(self, rows: list[int]) -> None:
        """Keep only these rows (in increasing order), dropping the others' KV."""
        for group in range(self.micro_batches):
            held = self.caches[group]
            if held is None:
                continue
            local = [self._local(row)[1] for row in rows if self.members[row] == group]
            if not local:
                self.caches[group] = None
            elif len(local) < self.members.count(group):
                mlx_api.keep_rows(held, local)
        self.members = [self.members[row] for row in rows]

    def micro_batch_rows(self) -> list[tuple[list[int], list[mlx_api.LayerCache]]]:
        """Each non-empty micro-batch: its rows (loop order) and its cache."""
        parts = []
        for group, held in enumerate(self.caches):
            rows = [row for row, g in enumerate(self.members) if g == group]
            if rows:
                assert held is not None
                parts.append((rows, held))
        return parts

    def only(self) -> list[mlx_api.LayerCache]:
        """The cache of the one row there is (a speculative round)."""
        [(rows, held)] = self.micro_batch_rows()
        assert rows == [0]
        return held
