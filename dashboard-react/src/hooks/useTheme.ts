import { useEffect, useState } from "react";
import { loadTheme, resolveTheme, THEME_STORAGE, type ThemeChoice } from "../state/theme";

const DARK_QUERY = "(prefers-color-scheme: dark)";

/** The theme choice, applied to the document as `data-theme`, remembered in the browser. */
export function useTheme(): [ThemeChoice, (choice: ThemeChoice) => void] {
  const [choice, setChoice] = useState<ThemeChoice>(() => loadTheme(globalThis.localStorage));
  useEffect(() => {
    const media = globalThis.matchMedia?.(DARK_QUERY);
    const apply = () => {
      document.documentElement.dataset.theme = resolveTheme(choice, media?.matches ?? false);
    };
    apply();
    localStorage.setItem(THEME_STORAGE, choice);
    media?.addEventListener?.("change", apply);
    return () => media?.removeEventListener?.("change", apply);
  }, [choice]);
  return [choice, setChoice];
}
