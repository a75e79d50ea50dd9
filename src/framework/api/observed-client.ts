import type { ApiClient, RequestInit } from './api-client.js';

/**
 * Told of each request before it is sent; answers what to do with its parsed answer (undefined: nothing).
 * Two steps, so an observer can note the state it knew when the request left.
 */
export type RequestObserver = (
  method: string,
  path: string,
) => ((answer: unknown) => void) | undefined;

/**
 * The same client, with every `request` (and every request of the resource clients it makes) shown
 * to `observe`: a view, not a copy, so it shares the connection pool, credentials, field manager and
 * request counting. Watches (`stream`) are not observed.
 */
export function observedClient(client: ApiClient, observe: RequestObserver): ApiClient {
  const view = Object.create(client) as ApiClient;
  Object.defineProperties(view, {
    request: {
      value: async <T>(method: string, path: string, init?: RequestInit): Promise<T> => {
        const onAnswer = observe(method, path);
        const answer = await client.request<T>(method, path, init);
        onAnswer?.(answer);
        return answer;
      },
    },
    // Run on the client itself: a method run on the view could set state (a connection pool) on the view alone.
    stream: { value: (path: string, init?: RequestInit) => client.stream(path, init) },
    close: { value: () => client.close() },
  });
  return view;
}
