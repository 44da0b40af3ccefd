import { type ComponentType, lazy, Suspense } from "react";
import { ApiError } from "./api/client";
import { KeyPrompt } from "./components/KeyPrompt";
import { Nav } from "./components/Nav";
import { ThemeToggle } from "./components/ThemeToggle";
import { ClusterDataProvider, useClusterData } from "./hooks/ClusterData";
import { useHashView } from "./hooks/useHashView";
import { useTheme } from "./hooks/useTheme";
import type { View } from "./state/route";
import { ChatView } from "./views/chat/ChatView";
import { ClusterView } from "./views/cluster/ClusterView";
import { EventsView } from "./views/events/EventsView";
import { InstancesView } from "./views/instances/InstancesView";
import { ModelsView } from "./views/models/ModelsView";
import { TracesView } from "./views/traces/TracesView";

// The charts and their library (uPlot) load when the view is first opened.
const LazyCharts = lazy(async () => ({ default: (await import("./views/charts/ChartsView")).ChartsView }));

function ChartsView() {
  return (
    <Suspense fallback={<p className="muted">Loading the charts…</p>}>
      <LazyCharts />
    </Suspense>
  );
}

const VIEWS: Record<View, ComponentType> = {
  cluster: ClusterView,
  charts: ChartsView,
  models: ModelsView,
  instances: InstancesView,
  chat: ChatView,
  traces: TracesView,
  events: EventsView,
};

function Connection() {
  const { cluster, error } = useClusterData();
  if (error) return <span className="badge health-error" role="status">node unreachable</span>;
  if (!cluster) return <span className="badge neutral" role="status">connecting…</span>;
  return <span className="badge health-ok" role="status">connected to {cluster.node_id}</span>;
}

function Shell() {
  const view = useHashView();
  const [theme, setTheme] = useTheme();
  const { error, refresh } = useClusterData();
  const CurrentView = VIEWS[view];
  const needsKey = error instanceof ApiError && error.needsKey;
  return (
    <>
      <a className="skip-link" href="#main">Skip to content</a>
      <header className="app-header">
        <h1>Skulk</h1>
        <Connection />
        <ThemeToggle choice={theme} onChange={setTheme} />
      </header>
      <Nav current={view} />
      <main id="main" tabIndex={-1}>
        {needsKey ? <KeyPrompt onSaved={refresh} /> : <CurrentView />}
      </main>
    </>
  );
}

export function App() {
  return (
    <ClusterDataProvider>
      <Shell />
    </ClusterDataProvider>
  );
}
