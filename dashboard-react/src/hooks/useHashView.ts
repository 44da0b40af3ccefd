import { useEffect, useState } from "react";
import { hashForPath, viewFromHash, type View } from "../state/route";

/** Opened at a view's path, the page moves it into the hash, where links keep it. */
function pathIntoHash(): void {
  const { pathname, search, hash } = window.location;
  const moved = hashForPath(pathname, search, hash);
  if (moved !== null) window.history.replaceState(null, "", `/${moved}`);
}

export function useHashView(): View {
  const [view, setView] = useState<View>(() => {
    pathIntoHash();
    return viewFromHash(window.location.hash);
  });
  useEffect(() => {
    const onChange = () => setView(viewFromHash(window.location.hash));
    window.addEventListener("hashchange", onChange);
    return () => window.removeEventListener("hashchange", onChange);
  }, []);
  return view;
}
