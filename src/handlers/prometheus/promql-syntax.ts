/**
 * Whether Prometheus would parse a PromQL expression, checked with Prometheus' own grammar
 * (`@prometheus-io/lezer-promql`, the one its web UI uses) plus the lexical rules that grammar does
 * not enforce (string literals and their escapes). A rule whose expression does not parse makes
 * Prometheus refuse its whole rule file, so the caller leaves that rule's group out instead.
 *
 * Every expression is untrusted: it is bounded in length and bracket depth before it reaches the
 * parser, the parser stops at the first error (no error recovery), and results are remembered so a
 * reconcile loop does not parse the same text again.
 *
 * The regular expressions of `=~`/`!~` matchers are checked as Prometheus compiles them while parsing
 * (RE2 syntax, the same check ServiceMonitor relabelings get).
 *
 * Limits of the check (the grammar is not Prometheus' Go parser): argument types and counts are not
 * checked (`rate(x)` passes here and is refused by Prometheus), the grammar follows the newest
 * Prometheus (functions added in 3.x pass for a 2.x server), and the parser gives up on chains of
 * several hundred binary operators (`a + b + ...`), which are reported as not parsing.
 */
import { parser } from '@prometheus-io/lezer-promql';
import { regexProblem } from './regex.js';

/** Longer expressions are refused before parsing. */
export const MAX_EXPR_LENGTH = 65_536;
/** Deeper bracket nesting is refused before parsing: the parser's cost grows with it. */
export const MAX_NESTING = 64;

/** What the deployed Prometheus' PromQL knows beyond the grammar's (newest) version. */
export interface PromQLDialect {
  /** `holt_winters(...)`, which Prometheus 2.x has and 3.0 removed (the grammar no longer knows it). */
  holtWinters: boolean;
}

const strictParser = parser.configure({ strict: true });

/** A same-length function name the grammar knows, standing in for `holt_winters` (arguments are not checked). */
const HOLT_WINTERS = 'holt_winters';
const HOLT_WINTERS_STAND_IN = 'day_of_month';

/** 1-based line and column (in characters) of a UTF-16 offset. */
export function position(text: string, offset: number): string {
  const before = text.slice(0, offset);
  const lineStart = before.lastIndexOf('\n') + 1;
  const line = before.split('\n').length;
  const column = Array.from(before.slice(lineStart)).length + 1;
  return `line ${line}, column ${column}`;
}

function isSpaceOrComment(rest: string): boolean {
  return /^(\s|#[^\n]*)*$/.test(rest);
}

/** What the parser stopped at, in words. */
function unexpected(expr: string, offset: number): string {
  const rest = expr.slice(offset);
  if (isSpaceOrComment(rest)) return 'unexpected end of expression';
  const fn = /([a-zA-Z_][a-zA-Z0-9_]*)\s*$/.exec(expr.slice(0, offset));
  if (rest.startsWith('(') && fn) return `unknown function "${fn[1]}"`;
  const token = /^([a-zA-Z0-9_:.]+|\S)/.exec(rest)?.[1] ?? rest.charAt(0);
  return `unexpected ${JSON.stringify(token.length > 32 ? `${token.slice(0, 32)}...` : token)}`;
}

const SIMPLE_ESCAPES = new Set(['a', 'b', 'f', 'n', 'r', 't', 'v', '\\']);

/**
 * One escape sequence of a quoted string starting at `at` (the backslash), as Prometheus' lexer
 * reads it: its length, or the problem.
 */
function escape(expr: string, at: number, quote: string): { length: number } | { problem: string } {
  const c = expr.charAt(at + 1);
  if (c === '' || c === '\n') return { problem: 'escape sequence is not terminated' };
  if (SIMPLE_ESCAPES.has(c) || c === quote) return { length: 2 };
  const forms: Record<string, { start: number; digits: number; base: number; max: number }> = {
    x: { start: 2, digits: 2, base: 16, max: 0xff },
    u: { start: 2, digits: 4, base: 16, max: 0x10ffff },
    U: { start: 2, digits: 8, base: 16, max: 0x10ffff },
  };
  const form = /[0-7]/.test(c) ? { start: 1, digits: 3, base: 8, max: 0xff } : forms[c];
  if (!form) return { problem: `unknown escape sequence "\\${c}"` };
  const digits = expr.slice(at + form.start, at + form.start + form.digits);
  const valid = form.base === 8 ? /^[0-7]+$/ : /^[0-9a-fA-F]+$/;
  if (digits.length < form.digits || !valid.test(digits))
    return {
      problem: `escape sequence "\\${expr.slice(at + 1, at + form.start + form.digits)}" needs ${form.digits} ${form.base === 8 ? 'octal' : 'hex'} digits`,
    };
  const value = parseInt(digits, form.base);
  if (value > form.max || (value >= 0xd800 && value <= 0xdfff))
    return {
      problem: `escape sequence "\\${expr.slice(at + 1, at + form.start + form.digits)}" is not a valid character`,
    };
  return { length: form.start + form.digits };
}

/**
 * The lexical pass: string literals (closed on their line, valid escapes; raw `...` strings take
 * anything) and bracket depth. Returns the problem, or the text with strings and comments blanked
 * out (same length) for looking up identifiers.
 */
function lexical(expr: string): { problem: string } | { code: string } {
  const code = expr.split('');
  let depth = 0;
  for (let i = 0; i < expr.length; i++) {
    const c = expr[i] as string;
    if (c === '#') {
      for (; i < expr.length && expr[i] !== '\n'; i++) code[i] = ' ';
    } else if (c === '"' || c === "'" || c === '`') {
      const start = i;
      let j = i + 1;
      for (; j < expr.length && expr[j] !== c; j++) {
        if (c === '`') continue;
        if (expr[j] === '\n') break;
        if (expr[j] === '\\') {
          const seq = escape(expr, j, c);
          if ('problem' in seq)
            return { problem: `has an invalid string at ${position(expr, start)}: ${seq.problem}` };
          j += seq.length - 1;
        }
      }
      if (j >= expr.length || expr[j] !== c)
        return { problem: `has an unterminated string starting at ${position(expr, start)}` };
      for (let k = start + 1; k < j; k++) code[k] = ' ';
      i = j;
    } else if (c === '(' || c === '[' || c === '{') {
      depth += 1;
      if (depth > MAX_NESTING)
        return {
          problem: `nests brackets more than ${MAX_NESTING} deep (at ${position(expr, i)})`,
        };
    } else if (c === ')' || c === ']' || c === '}') {
      depth = Math.max(0, depth - 1);
    }
  }
  return { code: code.join('') };
}

/** `expr` with each `holt_winters(` call renamed to a same-length function the grammar knows. */
function withoutHoltWinters(expr: string, code: string): string {
  if (!code.includes(HOLT_WINTERS)) return expr;
  let out = expr;
  for (const match of code.matchAll(/(?<![a-zA-Z0-9_:])holt_winters(?=\s*\()/g)) {
    const at = match.index ?? 0;
    out = `${out.slice(0, at)}${HOLT_WINTERS_STAND_IN}${out.slice(at + HOLT_WINTERS.length)}`;
  }
  return out;
}

const ESCAPED: Readonly<Record<string, string>> = {
  a: '\x07',
  b: '\b',
  f: '\f',
  n: '\n',
  r: '\r',
  t: '\t',
  v: '\v',
  '\\': '\\',
  '"': '"',
  "'": "'",
};

/** The value of a string literal whose escapes the lexical pass already accepted. */
function unquote(literal: string): string {
  const body = literal.slice(1, -1);
  if (literal.startsWith('`')) return body;
  let out = '';
  for (let i = 0; i < body.length; i += 1) {
    const c = body.charAt(i);
    if (c !== '\\') {
      out += c;
      continue;
    }
    const next = body.charAt(i + 1);
    const simple = ESCAPED[next];
    if (simple !== undefined) {
      out += simple;
      i += 1;
      continue;
    }
    const [start, digits, base] = /[0-7]/.test(next)
      ? [1, 3, 8]
      : next === 'x'
        ? [2, 2, 16]
        : next === 'u'
          ? [2, 4, 16]
          : [2, 8, 16];
    out += String.fromCodePoint(parseInt(body.slice(i + start, i + start + digits), base));
    i += start + digits - 1;
  }
  return out;
}

function grammarProblem(expr: string, text: string): string | undefined {
  let firstError: number | undefined;
  let regexNext = false;
  const regexes: Array<{ from: number; literal: string }> = [];
  try {
    strictParser.parse(text).iterate({
      enter: (node) => {
        if (firstError !== undefined) return false;
        if (node.type.isError) firstError = node.from;
        else if (node.name === 'EqlRegex' || node.name === 'NeqRegex') regexNext = true;
        else if (node.name === 'StringLiteral' && regexNext) {
          regexNext = false;
          regexes.push({ from: node.from, literal: expr.slice(node.from, node.to) });
        }
        return undefined;
      },
    });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const at = /^No parse at (\d+)$/.exec(message);
    if (!at) return `could not be checked: ${message}`;
    firstError = Number(at[1]);
  }
  if (firstError !== undefined)
    return `does not parse at ${position(expr, firstError)}: ${unexpected(expr, firstError)}`;
  // Prometheus compiles a matcher's regular expression while parsing: a bad one refuses the file too.
  for (const { from, literal } of regexes) {
    const problem = regexProblem(unquote(literal));
    // Only what Prometheus refuses: the size bounds relabelings get are ours, not Prometheus'.
    if (problem?.startsWith('does not compile') === true) {
      const shown = literal.length > 60 ? `${literal.slice(0, 57)}...` : literal;
      return `has a regular expression ${shown} at ${position(expr, from)} that ${problem}`;
    }
  }
  return undefined;
}

/** Remembered results, keyed by dialect and text; the oldest are forgotten past this many characters. */
const CACHE_CHARS = 4 * 1024 * 1024;
const cache = new Map<string, string | undefined>();
let cachedChars = 0;

function remember(key: string, problem: string | undefined): string | undefined {
  cache.set(key, problem);
  cachedChars += key.length;
  for (const oldest of cache.keys()) {
    if (cachedChars <= CACHE_CHARS) break;
    cache.delete(oldest);
    cachedChars -= oldest.length;
  }
  return problem;
}

/**
 * Why Prometheus would refuse `expr` as PromQL, as a phrase following "expr" (e.g. `does not parse
 * at line 1, column 11: unexpected end of expression`), or `undefined` when it parses.
 */
export function promqlProblem(expr: string, dialect: PromQLDialect): string | undefined {
  if (expr.length > MAX_EXPR_LENGTH)
    return `is ${expr.length} characters long, more than the ${MAX_EXPR_LENGTH} this operator checks`;
  if (expr.trim() === '') return 'is empty';
  const key = `${dialect.holtWinters ? 'h' : '-'}${expr}`;
  if (cache.has(key)) return cache.get(key);
  const lexed = lexical(expr);
  if ('problem' in lexed) return remember(key, lexed.problem);
  const text = dialect.holtWinters ? withoutHoltWinters(expr, lexed.code) : expr;
  return remember(key, grammarProblem(expr, text));
}
