// `npm run bench`: runs every benchmark scenario in turn; each prints JSON lines.
await import('./catch-up.js');
await import('./watch-reactor.js');
await import('./timers.js');
