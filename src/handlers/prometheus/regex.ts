/**
 * Whether a relabel regex compiles in Prometheus, decided by an RE2 engine (re2js, a port of Go's
 * regexp) rather than JavaScript's RegExp, whose syntax differs: JS accepts `\q`, `a{1001}`,
 * lookaround and backreferences, all of which Prometheus refuses.
 */
import { RE2JS } from 're2js';

/**
 * Why `regex` would not compile in Prometheus, or `undefined` when it would. Prometheus anchors
 * every relabel regex as `^(?:<regex>)$` before compiling it, so the anchored text is what is
 * checked (a lone `a)(b` is fine there, for one).
 */
export function regexProblem(regex: string): string | undefined {
  try {
    RE2JS.compile(`^(?:${regex})$`);
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  if (opensAngleNamedGroup(regex)) return 'invalid or unsupported Perl syntax: `(?<` (Prometheus 2.x; write `(?P<name>` instead)';
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
    } else if (ch === '(' && regex.startsWith('?<', i + 1) && regex[i + 3] !== '=' && regex[i + 3] !== '!') {
      return true;
    }
  }
  return false;
}
