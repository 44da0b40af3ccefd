// One time chart, drawn by uPlot: lines of one series, values on hover (uPlot's live
// legend), and markers as vertical lines people can hover or tab to for what happened.

import { useEffect, useMemo, useRef } from "react";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import type { HistoryMarker, Series } from "../api/history";
import { formatClock } from "../state/format";
import { alignedColumns, type ChartSpec, MARKER_TITLES, markersWithin, pointsDrawn } from "../state/history";

// Readable on the light and the dark theme alike.
const LINE_COLOURS = ["#2563eb", "#ea580c", "#16a34a", "#9333ea"];
const AXIS_COLOUR = "#8a8a80";
const GRID_COLOUR = "rgba(138, 138, 128, 0.25)";
const WHOLE_STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000];

export interface TimeChartProps {
  spec: ChartSpec;
  series: Series;
  markers: HistoryMarker[];
  height?: number;
}

function placeMarkers(plot: uPlot, markers: HistoryMarker[]): void {
  for (const old of plot.over.querySelectorAll(".chart-marker")) old.remove();
  const { min, max } = plot.scales.x ?? {};
  if (min === undefined || max === undefined) return;
  for (const marker of markersWithin(markers, min, max)) {
    const line = document.createElement("div");
    const what = `${MARKER_TITLES[marker.kind]} at ${formatClock(marker.at)}: ${marker.text}`;
    line.className = "chart-marker";
    line.dataset.kind = marker.kind;
    line.title = what;
    line.setAttribute("aria-label", what);
    line.tabIndex = 0;
    line.style.left = `${plot.valToPos(marker.at, "x")}px`;
    plot.over.appendChild(line);
  }
}

function xRange(min: number | null, max: number | null, markers: HistoryMarker[]): uPlot.Range.MinMax {
  const times = markers.map((m) => m.at);
  const from = Math.min(min ?? Infinity, ...times);
  const to = Math.max(max ?? -Infinity, ...times);
  if (!Number.isFinite(from) || !Number.isFinite(to)) return [null, null];
  return from === to ? [from - 30, to + 30] : [from, to];
}

export function TimeChart({ spec, series, markers, height = 170 }: TimeChartProps) {
  const host = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const markersNow = useRef(markers);
  markersNow.current = markers;
  const fields = useMemo(() => spec.lines.map((l) => l.field), [spec]);
  const columns = useMemo(() => alignedColumns(series, fields), [series, fields]);

  useEffect(() => {
    const element = host.current;
    if (!element) return undefined;
    const options: uPlot.Options = {
      width: Math.max(element.clientWidth, 200),
      height,
      scales: {
        // Wide enough for the markers too: a placement just before the first sample shows.
        x: { time: true, range: (_, min, max) => xRange(min, max, markersNow.current) },
        // Every measure is at least 0; a flat 0 line sits at the bottom of 0-1, not mid-way.
        y: { range: spec.range ?? ((_, __, max) => [0, max !== null && max > 0 ? max * 1.1 : 1]) },
      },
      series: [
        { value: (_, v) => (v === null ? "–" : formatClock(v).slice(0, 8)) },
        ...spec.lines.map((line, i) => ({
          label: line.label,
          stroke: LINE_COLOURS[i % LINE_COLOURS.length],
          width: 1.5,
          spanGaps: false,
          value: (_: uPlot, v: number | null) => spec.format(v),
        })),
      ],
      axes: [
        { stroke: AXIS_COLOUR, grid: { stroke: GRID_COLOUR } },
        { stroke: AXIS_COLOUR, grid: { stroke: GRID_COLOUR }, size: 70,
          values: (_, ticks) => ticks.map((t) => spec.format(t)),
          ...(spec.whole ? { incrs: WHOLE_STEPS } : {}) },
      ],
      cursor: { drag: { x: false, y: false } },
      hooks: { draw: [(u) => placeMarkers(u, markersNow.current)] },
    };
    const chart = new uPlot(options, columns as uPlot.AlignedData, element);
    plot.current = chart;
    const resize = new ResizeObserver(() => chart.setSize({ width: Math.max(element.clientWidth, 200), height }));
    resize.observe(element);
    return () => {
      resize.disconnect();
      chart.destroy();
      plot.current = null;
    };
    // The chart is made again only when what it draws changes shape; data goes to setData.
  }, [spec, height]);

  useEffect(() => {
    plot.current?.setData(columns as uPlot.AlignedData);
  }, [columns]);

  useEffect(() => {
    // setData rescales x (to take in new markers) and redraws, which places them.
    plot.current?.setData(columns as uPlot.AlignedData);
  }, [markers]);

  const points = pointsDrawn(series, fields);
  return (
    <figure className="time-chart" data-chart={spec.id} data-points={points}>
      <figcaption>{spec.title}</figcaption>
      <div ref={host} className="time-chart-plot" role="img"
        aria-label={`${spec.title}: ${points} samples over the last ${Math.round((series.t.length * 5) / 60)} minutes`} />
    </figure>
  );
}
