import type { ComponentChildren } from 'preact';

/**
 * Tabs as WAI-ARIA describes them: a tablist of buttons (the selected one in the Tab order, the
 * arrow keys, Home and End moving between them) and the selected tab's panel. Each tab is a link
 * target of its own (`onSelect` changes the address), so the browser's back button and a shared
 * link open the same tab.
 */
export function Tabs({ label, tabs, selected, onSelect, children }: { label: string; tabs: Array<[string, string]>; selected: string; onSelect: (id: string) => void; children: ComponentChildren }) {
  const move = (event: KeyboardEvent, index: number) => {
    const last = tabs.length - 1;
    const next = event.key === 'ArrowRight' ? (index === last ? 0 : index + 1) : event.key === 'ArrowLeft' ? (index === 0 ? last : index - 1) : event.key === 'Home' ? 0 : event.key === 'End' ? last : -1;
    if (next < 0) return;
    event.preventDefault();
    onSelect(tabs[next]![0]);
    // The new tab takes the focus once it is rendered as selected.
    requestAnimationFrame(() => document.getElementById(`tab-${tabs[next]![0]}`)?.focus());
  };
  return (
    <>
      <div role="tablist" aria-label={label}>
        {tabs.map(([id, name], index) => (
          <button
            type="button"
            role="tab"
            id={`tab-${id}`}
            aria-selected={id === selected}
            aria-controls={`panel-${id}`}
            tabIndex={id === selected ? 0 : -1}
            onClick={() => onSelect(id)}
            onKeyDown={(event) => move(event, index)}
          >
            {name}
          </button>
        ))}
      </div>
      <div role="tabpanel" id={`panel-${selected}`} aria-labelledby={`tab-${selected}`}>
        {children}
      </div>
    </>
  );
}
