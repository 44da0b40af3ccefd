import type { HistoryMarker, InstanceHistory } from "../../api/history";
import { TimeChart } from "../../components/TimeChart";
import { INSTANCE_CHARTS, markersWithin } from "../../state/history";

/** One instance's charts: what every node took for it, and its queue. */
export function InstanceCharts({ instance, markers }: { instance: InstanceHistory; markers: HistoryMarker[] }) {
  const own = markersWithin(markers, -Infinity, Infinity, { instanceId: instance.instance_id });
  return (
    <section aria-label={`Charts of instance ${instance.instance_id}`} data-instance-charts={instance.instance_id}>
      <h4>{instance.model_id} <span className="muted small">{instance.instance_id}</span></h4>
      <div className="chart-grid">
        {INSTANCE_CHARTS.map((spec) => (
          <TimeChart key={spec.id} spec={spec} series={instance.series} markers={own} />
        ))}
      </div>
    </section>
  );
}
