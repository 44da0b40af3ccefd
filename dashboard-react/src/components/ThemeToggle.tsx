import { nextTheme, type ThemeChoice } from "../state/theme";

export function ThemeToggle({ choice, onChange }: { choice: ThemeChoice; onChange: (c: ThemeChoice) => void }) {
  const next = nextTheme(choice);
  return (
    <button type="button" className="ghost" onClick={() => onChange(next)} aria-label={`Theme: ${choice}. Switch to ${next}`}>
      Theme: {choice}
    </button>
  );
}
