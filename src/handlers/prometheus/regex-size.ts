/**
 * How large the compiled program of an RE2 regex would be, estimated from its text alone, so that a
 * hostile regex is refused before an engine expands it. RE2 (and re2js) compile `x{n}` as n copies
 * of `x`: `a{1000}` repeated a few hundred times is a few kilobytes of text but hundreds of
 * thousands of instructions, seconds of blocked event loop and a heap the operator cannot afford.
 */

/** RE2's largest repeat count, and its largest product of nested repeat counts (`repeatIsValid`). */
export const MAX_REPEAT = 1000;

/** What {@link estimateRegexSize} found. */
export interface RegexSize {
  /**
   * Roughly the number of instructions of the compiled program, after the weights of Go's
   * `regexp/syntax` `calcSize`: one per literal character or class, repeats multiply their operand.
   */
  instructions: number;
  /** The largest product of nested `{n}` / `{n,m}` counts (RE2 refuses more than {@link MAX_REPEAT}). */
  repeatProduct: number;
}

/** One open group (or the whole regex): its finished alternatives and the one being read. */
interface Frame {
  /** Size of the alternatives before the last `|`. */
  done: number;
  /** Size of the current alternative. */
  current: number;
  /** Size of the last atom of the current alternative, which a following repeat applies to. */
  last: number;
  /** Largest nested repeat product inside the last atom. */
  lastProduct: number;
  /** Largest nested repeat product anywhere in this group. */
  product: number;
  /** Whether the group captures (costs two instructions more). */
  capture: boolean;
}

function frame(capture: boolean): Frame {
  return { done: 0, current: 0, last: 0, lastProduct: 1, product: 1, capture };
}

/** Sizes stay finite (and never NaN) however absurd the counts: anything this large is refused anyway. */
const CEILING = 1e15;
const capped = (n: number): number => Math.min(n, CEILING);

function addAtom(f: Frame, size: number, product = 1): void {
  f.current = capped(f.current + size);
  f.last = size;
  f.lastProduct = product;
  f.product = Math.max(f.product, product);
}

/** The index just past a `[...]` class that opens at `start`, or the text's end when it is unterminated. */
function classEnd(regex: string, start: number): number {
  let i = start + 1;
  if (regex[i] === '^') i++;
  // A `]` right after `[` or `[^` is a member, not the end.
  if (regex[i] === ']') i++;
  while (i < regex.length) {
    const ch = regex[i];
    if (ch === ']') return i + 1;
    if (ch === '\\') {
      i = escapeEnd(regex, i);
    } else if (ch === '[' && regex[i + 1] === ':') {
      const close = regex.indexOf(':]', i + 2);
      i = close < 0 ? i + 1 : close + 2;
    } else {
      i++;
    }
  }
  return regex.length;
}

/** The index just past the escape that starts at `start` (`\d`, `\pL`, `\p{Greek}`, `\x{263a}`). */
function escapeEnd(regex: string, start: number): number {
  const kind = regex[start + 1];
  if ((kind === 'p' || kind === 'P' || kind === 'x') && regex[start + 2] === '{') {
    const close = regex.indexOf('}', start + 3);
    return close < 0 ? regex.length : close + 1;
  }
  if (kind === 'p' || kind === 'P') return Math.min(start + 3, regex.length);
  if (kind === 'x') return Math.min(start + 4, regex.length);
  return Math.min(start + 2, regex.length);
}

/** A `{n}`, `{n,}` or `{n,m}` repeat at `start`: how many copies it costs, its count, its end; `undefined` when `{` is a literal there. */
function readRepeat(
  regex: string,
  start: number,
): { copies: number; counted: number; end: number } | undefined {
  const match = /^\{(\d+)(,(\d*))?\}/.exec(regex.slice(start, start + 24));
  if (match === null) return undefined;
  // Clamped: an absurd count only has to stay absurd, not overflow.
  const min = Math.min(Number(match[1]), 1e9);
  const max = match[2] === undefined ? min : match[3] === '' ? -1 : Math.min(Number(match[3]), 1e9);
  // Go simplifies x{n,} to n copies and a star, x{n,m} to n copies and m-n nested optional ones,
  // each of which costs a split instruction besides its copy: counted twice here.
  const copies = max < 0 ? min + 1 : max > min ? min + 2 * (max - min) : min;
  // repeatIsValid counts the maximum, or the minimum when unbounded.
  const counted = max < 0 ? min : max;
  return { copies, counted, end: start + match[0].length };
}

/**
 * Estimates the compiled size of `regex` without compiling it: linear in its length, no recursion,
 * whatever the nesting. Invalid syntax is not judged here (the engine does that, cheaply, once the
 * size is known to be small); it only has to be estimated no lower than an engine would build.
 */
export function estimateRegexSize(regex: string): RegexSize {
  const stack: Frame[] = [frame(false)];
  const top = (): Frame => stack[stack.length - 1] as Frame;
  let i = 0;
  while (i < regex.length) {
    const ch = regex[i] as string;
    const f = top();
    if (ch === '\\') {
      if (regex[i + 1] === 'Q') {
        // \Q...\E: every character a literal.
        const end = regex.indexOf('\\E', i + 2);
        const text = end < 0 ? regex.slice(i + 2) : regex.slice(i + 2, end);
        if (text.length > 0) {
          f.current += text.length - 1;
          addAtom(f, 1);
        }
        i = end < 0 ? regex.length : end + 2;
        continue;
      }
      addAtom(f, 1);
      i = escapeEnd(regex, i);
    } else if (ch === '[') {
      addAtom(f, 1);
      i = classEnd(regex, i);
    } else if (ch === '(') {
      if (regex[i + 1] === '?' && /^\(\?[a-zA-Z-]*\)/.test(regex.slice(i, i + 16))) {
        // `(?i)`: flags only, no group.
        i = regex.indexOf(')', i) + 1;
        continue;
      }
      // `(?:`, `(?i:`, `(?P<name>` and `(?<name>` open a group as `(` does; only named ones capture.
      const prefix = /^\(\?(?:P?<[^>]*>|[a-zA-Z-]*:)/.exec(regex.slice(i, i + 64));
      stack.push(frame(regex[i + 1] !== '?' || (prefix?.[0].includes('<') ?? false)));
      i += prefix === null ? 1 : prefix[0].length;
    } else if (ch === ')') {
      if (stack.length > 1) {
        stack.pop();
        const size = f.done + f.current + (f.capture ? 2 : 0);
        addAtom(top(), size, f.product);
      }
      i++;
    } else if (ch === '|') {
      f.done = capped(f.done + f.current + 1);
      f.current = 0;
      f.last = 0;
      f.lastProduct = 1;
      i++;
    } else if (ch === '*' || ch === '+' || ch === '?') {
      f.current += 1;
      i++;
    } else if (ch === '{') {
      const repeat = readRepeat(regex, i);
      if (repeat === undefined) {
        addAtom(f, 1);
        i++;
        continue;
      }
      f.current = capped(f.current + f.last * (repeat.copies - 1) + 1);
      f.last = capped(f.last * repeat.copies);
      if (repeat.counted >= 2) f.lastProduct = capped(f.lastProduct * repeat.counted);
      f.product = Math.max(f.product, f.lastProduct);
      i = repeat.end;
    } else {
      addAtom(f, 1);
      i++;
    }
  }
  // Unclosed groups (the engine refuses them) still count.
  let instructions = 0;
  let repeatProduct = 1;
  for (const f of stack) {
    instructions = capped(instructions + f.done + f.current);
    repeatProduct = Math.max(repeatProduct, f.product);
  }
  return { instructions, repeatProduct };
}
