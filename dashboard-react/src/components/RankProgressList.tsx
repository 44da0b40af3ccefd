import type { InstanceRank } from "../api/types";
import { formatLayers } from "../state/format";
import { rankProgress } from "../state/instances";
import { Meter } from "./Meter";

/** One progress bar per rank: how far its runner is from serving. */
export function RankProgressList({ ranks }: { ranks: InstanceRank[] }) {
  return (
    <ol className="rank-progress" aria-label="Load progress per rank">
      {ranks.map((rank) => {
        const progress = rankProgress(rank.runner_status, rank.fetch);
        return (
          <li key={rank.runner_id}>
            <Meter
              kind="progressbar"
              label={`Rank ${rank.rank} on ${rank.node_id}, ${formatLayers(rank.start_layer, rank.end_layer)}`}
              fraction={progress.fraction}
              valueText={progress.label}
              tone={progress.tone === "progress" ? "normal" : progress.tone}
            />
          </li>
        );
      })}
    </ol>
  );
}
