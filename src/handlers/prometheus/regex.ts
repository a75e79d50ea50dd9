/**
 * Whether a relabel regex compiles in Prometheus, decided by an RE2 engine (re2js, a port of Go's
 * regexp) rather than JavaScript's RegExp, whose syntax differs: JS accepts `\q`, `a{1001}`,
 * lookaround and backreferences, all of which Prometheus refuses.
 *
 * The regexes are tenants' input, and compiling one costs time and memory in proportion to its
 * program, not its text (`a{1000}` is a thousand instructions). So a regex is measured first and
 * compiled only when small, and each distinct regex is compiled once, not on every render.
 */
import { RE2JS } from 're2js';
import { estimateRegexSize, MAX_REPEAT } from './regex-size.js';

/**
 * The longest regex accepted, in characters. Upstream's ServiceMonitors stay well below it (the
 * longest in kube-prometheus, a list of kubelet metrics to drop, is under 500); a longer list of
 * alternatives can be split over several rules.
 */
export const MAX_REGEX_LENGTH = 1024;

/**
 * The largest compiled program accepted, in instructions as estimated by `estimateRegexSize`.
 * Go's own limit is about 3.3 million, but re2js needs tens of milliseconds per thousand
 * instructions (several times that for Unicode classes such as `\pL`, and on a loaded node), so
 * the limit keeps any one compile short; `[0-9a-f]{64}`, `[a-z0-9]{1,253}` or `a{1000}` remain
 * below it.
 */
export const MAX_REGEX_INSTRUCTIONS = 4000;

/**
 * The most instructions all regexes of one ServiceMonitor may add up to, so that an object full of
 * rules (up to the API server's 1.5 MiB) cannot make one render compile for minutes.
 */
export const MAX_MONITOR_REGEX_INSTRUCTIONS = 20_000;

/** How many distinct regexes keep their verdict; renders re-check the same few over and over. */
export const REGEX_CACHE_SIZE = 1000;

/** Verdicts by regex text, least recently used first (a Map keeps insertion order). */
const verdicts = new Map<string, string | null>();

/**
 * Why `regex` is refused, or `undefined` when Prometheus would compile it and it is small enough
 * to check. Prometheus anchors every relabel regex as `^(?:<regex>)$` before compiling it, so the
 * anchored text is what is checked (a lone `a)(b` is fine there, for one). The reason reads after
 * the regex: `"(go_.*" does not compile: ...`, `"..." is 3500 characters long; ...`.
 */
export function regexProblem(regex: string): string | undefined {
  if (regex.length > MAX_REGEX_LENGTH) {
    return `is ${regex.length} characters long; at most ${MAX_REGEX_LENGTH} are accepted (a longer list of alternatives can be split over several rules)`;
  }
  const known = verdicts.get(regex);
  if (known !== undefined) {
    // Refresh its place: recently used verdicts are the last to go.
    verdicts.delete(regex);
    verdicts.set(regex, known);
    return known ?? undefined;
  }
  const verdict = judge(regex) ?? null;
  verdicts.set(regex, verdict);
  if (verdicts.size > REGEX_CACHE_SIZE) verdicts.delete(verdicts.keys().next().value as string);
  return verdict ?? undefined;
}

/** The uncached check: size first, so that only small programs are ever compiled. */
function judge(regex: string): string | undefined {
  const size = estimateRegexSize(regex);
  if (size.repeatProduct > MAX_REPEAT) {
    return `does not compile: invalid repeat count: repeat counts multiply to ${size.repeatProduct}, RE2 allows at most ${MAX_REPEAT}`;
  }
  if (size.instructions > MAX_REGEX_INSTRUCTIONS) {
    return `would compile to about ${size.instructions} instructions; at most ${MAX_REGEX_INSTRUCTIONS} are accepted (lower its repeat counts)`;
  }
  try {
    RE2JS.compile(`^(?:${regex})$`);
  } catch (error) {
    return `does not compile: ${error instanceof Error ? error.message : String(error)}`;
  }
  if (opensAngleNamedGroup(regex))
    return 'does not compile: invalid or unsupported Perl syntax: `(?<` (Prometheus 2.x; write `(?P<name>` instead)';
  return undefined;
}

/**
 * Whether `regex` opens a `(?<name>` group (outside escapes, `\Q...\E` and character classes).
 * Go's regexp accepts that form only since Go 1.22; Prometheus 2.x releases such as 2.42, the
 * default here, were built with older Go and refuse it, while `(?P<name>` works everywhere.
 */
function opensAngleNamedGroup(regex: string): boolean {
  let inClass = false;
  for (let i = 0; i < regex.length; i++) {
    const ch = regex[i];
    if (ch === '\\') {
      if (regex[i + 1] === 'Q') {
        const end = regex.indexOf('\\E', i + 2);
        if (end < 0) return false;
        i = end + 1;
      } else {
        i++;
      }
    } else if (inClass) {
      if (ch === ']') inClass = false;
    } else if (ch === '[') {
      inClass = true;
      // A `]` right after `[` or `[^` is a member, not the end of the class.
      if (regex[i + 1] === '^') i++;
      if (regex[i + 1] === ']') i++;
    } else if (
      ch === '(' &&
      regex.startsWith('?<', i + 1) &&
      regex[i + 3] !== '=' &&
      regex[i + 3] !== '!'
    ) {
      return true;
    }
  }
  return false;
}
