import { createContext, useContext, type ReactNode } from "react";
import { api } from "../api/client";
import type { ClusterState, ClusterSummary } from "../api/types";
import { usePoll } from "./usePoll";

export const POLL_MS = 1500;

export interface ClusterData {
  state: ClusterState | null;
  cluster: ClusterSummary | null;
  error: Error | null;
  refresh: () => void;
}

const Context = createContext<ClusterData>({ state: null, cluster: null, error: null, refresh: () => {} });

/** Polls `/state` and `/cluster` for every view below it. */
export function ClusterDataProvider({ children }: { children: ReactNode }) {
  const state = usePoll(api.state, POLL_MS);
  const cluster = usePoll(api.cluster, POLL_MS);
  const value: ClusterData = {
    state: state.data,
    cluster: cluster.data,
    error: state.error ?? cluster.error,
    refresh: () => {
      state.refresh();
      cluster.refresh();
    },
  };
  return <Context.Provider value={value}>{children}</Context.Provider>;
}

export function useClusterData(): ClusterData {
  return useContext(Context);
}

export { Context as ClusterDataContext };
