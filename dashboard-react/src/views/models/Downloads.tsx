import { Meter } from "../../components/Meter";
import { useClusterData } from "../../hooks/ClusterData";
import { downloadRows } from "../../state/downloads";

/** Every node's pulls into its store (`skulk models pull`, or a rank fetching from the
 *  hub), byte by byte; nothing when none is under way. */
export function Downloads({ nowSeconds = Date.now() / 1000 }: { nowSeconds?: number }) {
  const { state } = useClusterData();
  const rows = state ? downloadRows(state.telemetry, nowSeconds) : [];
  if (rows.length === 0) return null;
  return (
    <section aria-labelledby="downloads-title" className="downloads">
      <h3 id="downloads-title">Downloads</h3>
      <ol className="rank-progress" aria-label="Downloads into the nodes' stores">
        {rows.map((row) => (
          <li key={row.key}>
            <Meter
              kind="progressbar"
              label={`${row.modelId} from ${row.repo} on ${row.nodeId}`}
              fraction={row.fraction}
              valueText={row.label}
              tone={row.stopped ? "failed" : "normal"}
            />
          </li>
        ))}
      </ol>
    </section>
  );
}
