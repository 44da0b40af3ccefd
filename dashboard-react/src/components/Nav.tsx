import { hashFor, VIEW_TITLES, VIEWS, type View } from "../state/route";

export function Nav({ current }: { current: View }) {
  return (
    <nav aria-label="Views" className="nav">
      <ul>
        {VIEWS.map((view) => (
          <li key={view}>
            <a href={hashFor(view)} aria-current={view === current ? "page" : undefined}>
              {VIEW_TITLES[view]}
            </a>
          </li>
        ))}
      </ul>
    </nav>
  );
}
