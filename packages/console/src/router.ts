import { useEffect, useState } from 'preact/hooks';

/**
 * Hash routes: `#/projects`, `#/members`, `#/api-tokens`, `#/history` (org pages), `#/cleanup/{project_id}`
 * (a project's flag cleanup), and
 * `#/env/{env_id}/{page}[/{id}[/{tab}]]` for pages of one environment (flags, segments,
 * experiments, sdk-keys, events; a flag's page has tabs). Switching environment swaps the id and
 * keeps the page.
 */
export interface Route {
  envId?: string;
  page: string;
  id?: string;
  /** A tab of the page of `id` (a flag's Targeting, Variants, Settings, Schedule, Insights or History). */
  tab?: string;
}

export function parseRoute(hash: string): Route {
  const parts = hash.replace(/^#\/?/, '').split('/').filter((part) => part !== '').map(decodeURIComponent);
  if (parts[0] === 'env' && parts[1]) return { envId: parts[1], page: parts[2] ?? 'flags', id: parts[3], tab: parts[4] };
  return { page: parts[0] ?? 'home', id: parts[1] };
}

export function hrefOf(route: Route): string {
  const tail = [route.page, ...(route.id === undefined ? [] : [route.id]), ...(route.id !== undefined && route.tab !== undefined ? [route.tab] : [])].map(encodeURIComponent).join('/');
  return route.envId ? `#/env/${encodeURIComponent(route.envId)}/${tail}` : `#/${tail}`;
}

export function navigate(route: Route): void {
  location.hash = hrefOf(route);
}

export function useRoute(): Route {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const onChange = () => setRoute(parseRoute(location.hash));
    addEventListener('hashchange', onChange);
    return () => removeEventListener('hashchange', onChange);
  }, []);
  return route;
}
