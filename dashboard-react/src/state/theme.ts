// Light, dark, or whatever the system prefers; the choice is remembered in the browser.

export type ThemeChoice = "system" | "light" | "dark";
export const THEME_STORAGE = "skulk.theme";
const CHOICES: ThemeChoice[] = ["system", "light", "dark"];

export function loadTheme(storage: Pick<Storage, "getItem"> | undefined): ThemeChoice {
  const saved = storage?.getItem(THEME_STORAGE);
  return CHOICES.includes(saved as ThemeChoice) ? (saved as ThemeChoice) : "system";
}

export function resolveTheme(choice: ThemeChoice, prefersDark: boolean): "light" | "dark" {
  if (choice === "system") return prefersDark ? "dark" : "light";
  return choice;
}

export function nextTheme(choice: ThemeChoice): ThemeChoice {
  return CHOICES[(CHOICES.indexOf(choice) + 1) % CHOICES.length]!;
}
