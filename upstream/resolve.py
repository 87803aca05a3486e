# SPDX-License-Identifier: MIT
"""Preprocessor conditionals resolved for one target kernel, as unifdef resolves them.

The module builds out of tree against every kernel from 6.1 on, and says where kernels
differ with conditionals on LINUX_VERSION_CODE or on a macro a kernel defines. Mainline
carries none of that: for the target (the base of the series) each such conditional has
one answer, and only the branch it takes is kept. What the target's configuration decides
(CONFIG_*) stays as it is.

The facts come from the manifest: the target's version, the macros its headers define and
the ones nobody defines there (build switches of the out-of-tree module). A conditional
that names anything else is refused, not guessed: the manifest is where a new guard's
answer for the target is written down. Macros the file defines itself are followed, so a
guard computed from the version (`#define X 1` under a version check, then `#if X`) resolves
too, and such a macro's definition goes once nothing uses it any more.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field

DIRECTIVE = re.compile(r"^\s*#\s*(if|ifdef|ifndef|elif|else|endif|define|undef)\b(.*)$")
IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*\b")
DEFINITION = re.compile(r"^\s*([A-Za-z_]\w*)(\(([^)]*)\))?\s*(.*)$")
# A conditional's trailing comment, which is no part of its expression.
TRAILING_COMMENT = re.compile(r"/\*.*?\*/|//.*$")


class ResolveError(ValueError):
    """A conditional the facts cannot decide, or a malformed nesting."""


class Unresolved(Exception):
    """The expression depends on something the target's configuration decides."""


@dataclass(frozen=True)
class Target:
    """What the target kernel is, for the conditionals."""
    version: tuple[int, int, int]
    defined: frozenset[str] = frozenset()      # macros the target's headers define
    undefined: frozenset[str] = frozenset()    # macros nothing defines there
    kept_prefixes: tuple[str, ...] = ("CONFIG_",)  # left for the configuration
    # Macros the target fixes the value of: written into the code, their definitions gone.
    substituted: tuple[tuple[str, str], ...] = ()
    # Whether each header a `__has_include` asks for is there.
    headers: tuple[tuple[str, bool], ...] = ()

    @property
    def version_code(self) -> int:
        return kernel_version(*self.version)

    def kept(self, name: str) -> bool:
        return name.startswith(self.kept_prefixes) or name == "IS_ENABLED"


def kernel_version(major: int, minor: int, sub: int) -> int:
    """The kernel's KERNEL_VERSION(a, b, c): the sublevel saturates at 255."""
    return (major << 16) + (minor << 8) + min(sub, 255)


@dataclass
class _Macro:
    params: list[str] | None    # None: object-like
    body: str


@dataclass
class _Group:
    """One #if ... #endif as it is being read."""
    kept: bool                  # unresolved: its directives stay in the output
    emitting: bool              # the lines of the current branch go to the output
    outer_emitting: bool
    taken: bool = False         # a branch of it was already chosen
    line: int = 0
    fresh: bool = False         # nothing of the branch read yet: a comment here explains the guard


@dataclass
class Resolution:
    text: str
    used_macros: set[str] = field(default_factory=set)  # the file's macros the resolution read


def _logical_lines(text: str) -> list[tuple[int, list[str]]]:
    """(first line number, physical lines) for each logical line: a directive continues
    over lines ending in a backslash."""
    lines = text.split("\n")
    out, i = [], 0
    while i < len(lines):
        start, group = i, [lines[i]]
        if DIRECTIVE.match(lines[i]):
            while group[-1].endswith("\\") and i + 1 < len(lines):
                i += 1
                group.append(lines[i])
        out.append((start + 1, group))
        i += 1
    return out


def _joined(group: list[str]) -> str:
    return " ".join(part.rstrip("\\").strip() for part in group)


class _Evaluator:
    def __init__(self, target: Target, macros: dict[str, _Macro], where: str, guards: set[str]):
        self.target, self.macros, self.where, self.guards = target, macros, where, guards
        self.used: set[str] = set()

    def value(self, expression: str) -> int:
        """The expression's value for the target; Unresolved if the configuration decides it."""
        python = self._to_python(self._expand(expression, depth=0)).strip()
        try:
            tree = ast.parse(python, mode="eval")
        except SyntaxError:
            raise ResolveError(f"{self.where}: cannot read the condition {expression!r}") from None
        return int(_evaluate(tree.body))

    def _expand(self, expression: str, depth: int) -> str:
        if depth > 16:
            raise ResolveError(f"{self.where}: macros nest too deep in {expression!r}")
        expression = TRAILING_COMMENT.sub(" ", expression)
        expression = re.sub(r"\b__has_include\s*\(\s*[\"<]([^\">]+)[\">]\s*\)",
                            lambda m: self._has_include(m.group(1)), expression)
        expression = re.sub(r"\bdefined\s*\(\s*(\w+)\s*\)|\bdefined\s+(\w+)",
                            lambda m: self._defined(m.group(1) or m.group(2)), expression)
        return self._expand_macros(expression, depth)

    def _expand_macros(self, expression: str, depth: int) -> str:
        out, position = [], 0
        for match in IDENTIFIER.finditer(expression):
            name = match.group(0)
            if match.start() < position:
                continue
            out.append(expression[position:match.start()])
            position = match.end()
            if name == "LINUX_VERSION_CODE":
                out.append(str(self.target.version_code))
            elif name == "KERNEL_VERSION":
                arguments, position = _call_arguments(expression, position, self.where)
                if len(arguments) != 3:
                    raise ResolveError(f"{self.where}: KERNEL_VERSION takes 3 arguments")
                numbers = [_evaluate(ast.parse(self._to_python(self._expand(a, depth + 1)).strip(),
                                               mode="eval").body) for a in arguments]
                out.append(str(kernel_version(*numbers)))
            elif name in self.macros:
                self.used.add(name)
                macro = self.macros[name]
                if macro.params is None:
                    out.append("(" + self._expand(macro.body, depth + 1) + ")")
                else:
                    arguments, position = _call_arguments(expression, position, self.where)
                    out.append("(" + self._expand(_substitute(macro, arguments), depth + 1) + ")")
            elif self.target.kept(name):
                raise Unresolved(name)
            elif re.fullmatch(r"\d+[uUlL]*", name) or name in ("and", "or", "not"):
                out.append(name)
            else:
                raise ResolveError(f"{self.where}: the condition names {name}, which the manifest's "
                                   "[target] neither defines nor leaves undefined")
        out.append(expression[position:])
        return "".join(out)

    def _has_include(self, header: str) -> str:
        headers = dict(self.target.headers)
        if header not in headers:
            raise ResolveError(f"{self.where}: whether the target has {header} is not in the "
                               "manifest's [target] headers")
        return "1" if headers[header] else "0"

    def _defined(self, name: str) -> str:
        if name in self.guards:
            raise Unresolved(name)
        if name in dict(self.target.substituted):
            return "1"
        if name in self.macros:
            self.used.add(name)
            return "1"
        if name in self.target.defined:
            return "1"
        if name in self.target.undefined:
            return "0"
        if self.target.kept(name):
            raise Unresolved(name)
        raise ResolveError(f"{self.where}: whether {name} is defined in the target is not in the "
                           "manifest's [target] (defined or undefined)")

    @staticmethod
    def _to_python(expression: str) -> str:
        expression = re.sub(r"\b(\d+)[uUlL]+\b", r"\1", expression)
        expression = expression.replace("&&", " and ").replace("||", " or ")
        return re.sub(r"!(?!=)", " not ", expression)


def _call_arguments(expression: str, position: int, where: str) -> tuple[list[str], int]:
    match = re.compile(r"\s*\(").match(expression, position)
    if not match:
        raise ResolveError(f"{where}: a function-like macro without arguments")
    depth, start, arguments = 1, match.end(), []
    i = start
    while i < len(expression) and depth:
        char = expression[i]
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if (char == "," and depth == 1) or depth == 0:
            arguments.append(expression[start:i].strip())
            start = i + 1
        i += 1
    if depth:
        raise ResolveError(f"{where}: unbalanced parentheses in a macro call")
    return arguments, i


def _substitute(macro: _Macro, arguments: list[str]) -> str:
    if len(arguments) != len(macro.params):
        raise ResolveError(f"macro called with {len(arguments)} arguments, takes {len(macro.params)}")
    values = dict(zip(macro.params, arguments))
    return IDENTIFIER.sub(lambda m: f"({values[m.group(0)]})" if m.group(0) in values else m.group(0),
                          macro.body)


_BINARY = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
           ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b,
           ast.BitAnd: lambda a, b: a & b, ast.BitOr: lambda a, b: a | b}
_COMPARE = {ast.Lt: lambda a, b: a < b, ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b,
            ast.GtE: lambda a, b: a >= b, ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b}


def _evaluate(node: ast.AST) -> int:
    """Integer arithmetic, comparisons and logic only: nothing else may be in a condition."""
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.BoolOp):
        values = [_evaluate(v) for v in node.values]
        return int(all(values) if isinstance(node.op, ast.And) else any(values))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.Not, ast.USub)):
        value = _evaluate(node.operand)
        return int(not value) if isinstance(node.op, ast.Not) else -value
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_evaluate(node.left), _evaluate(node.right))
    if isinstance(node, ast.Compare):
        left = _evaluate(node.left)
        for op, right_node in zip(node.ops, node.comparators):
            if type(op) not in _COMPARE:
                break
            right = _evaluate(right_node)
            if not _COMPARE[type(op)](left, right):
                return 0
            left = right
        else:
            return 1
    raise ResolveError(f"not an integer expression: {ast.dump(node)}")


def resolve(text: str, target: Target, name: str = "<file>") -> Resolution:
    """The text with every conditional the target decides replaced by its taken branch."""
    resolver = _Resolver(target, name, _logical_lines(text))
    out = resolver.run()
    text = _drop_spent_macros(out, resolver.used)
    text = _substitute_fixed(text, dict(target.substituted))
    return Resolution(_drop_unused_version_header(text), resolver.used)


class _Resolver:
    """One pass over a file's logical lines, keeping what the target compiles."""

    def __init__(self, target: Target, name: str, logical: list[tuple[int, list[str]]]):
        self.target, self.name, self.logical = target, name, logical
        self.guards = _include_guards(logical)
        self.macros: dict[str, _Macro] = {}
        self.stack: list[_Group] = []
        self.out: list[tuple[int, list[str]]] = []
        self.used: set[str] = set()
        self.emitting = True
        self.in_guard_comment = False

    def run(self) -> list[tuple[int, list[str]]]:
        for number, group in self.logical:
            match = DIRECTIVE.match(group[0])
            if not match:
                self._text(number, group)
                continue
            kind, rest = match.group(1), DIRECTIVE.match(_joined(group)).group(2).strip()
            where = f"{self.name}:{number}"
            if kind in ("if", "ifdef", "ifndef"):
                self._open(kind, rest, number, group, where)
            elif kind in ("elif", "else"):
                self._branch(kind, rest, number, group, where)
            elif kind == "endif":
                self._close(number, group, where)
            elif self.emitting:  # define, undef
                _record(kind, rest, self.macros)
                self.out.append((number, group))
        if self.stack:
            raise ResolveError(f"{self.name}:{self.stack[-1].line}: #if without #endif")
        return self.out

    def _text(self, number: int, group: list[str]) -> None:
        """A line of code or comment; a comment that opens a resolved branch explains the
        guard, and goes with it."""
        fresh = bool(self.stack) and self.stack[-1].fresh
        if self.stack:
            self.stack[-1].fresh = False
        self.in_guard_comment = self.in_guard_comment or (fresh and group[0].lstrip().startswith("/*"))
        if self.emitting and not self.in_guard_comment:
            self.out.append((number, group))
        if self.in_guard_comment and group[0].rstrip().endswith("*/"):
            self.in_guard_comment = False

    def _value(self, condition: str, where: str) -> int | None:
        return _value(condition, self.target, self.macros, where, self.used, self.guards)

    def _open(self, kind: str, rest: str, number: int, group: list[str], where: str) -> None:
        condition = {"if": rest, "ifdef": f"defined({_first_word(rest)})",
                     "ifndef": f"!defined({_first_word(rest)})"}[kind]
        value = self._value(condition, where)
        if value is None:
            frame = _Group(kept=True, emitting=self.emitting, outer_emitting=self.emitting)
            if self.emitting:
                self.out.append((number, group))
        else:
            frame = _Group(kept=False, emitting=self.emitting and bool(value), outer_emitting=self.emitting,
                           taken=bool(value), fresh=True)
        frame.line = number
        self.stack.append(frame)
        self.emitting = frame.emitting

    def _branch(self, kind: str, rest: str, number: int, group: list[str], where: str) -> None:
        if not self.stack:
            raise ResolveError(f"{where}: #{kind} without #if")
        frame = self.stack[-1]
        if frame.kept:
            if frame.outer_emitting:
                self.out.append((number, group))
            return
        if frame.taken:
            frame.emitting = False
        elif kind == "else":
            frame.emitting = frame.taken = frame.outer_emitting
        else:
            value = self._value(rest, where)
            if value is None:
                raise ResolveError(f"{where}: an #elif the configuration decides after one the "
                                   "target decides; write it as a nested #if")
            frame.emitting = bool(value) and frame.outer_emitting
            frame.taken = bool(value)
        frame.fresh = True
        self.emitting = frame.emitting

    def _close(self, number: int, group: list[str], where: str) -> None:
        if not self.stack:
            raise ResolveError(f"{where}: #endif without #if")
        frame = self.stack.pop()
        if frame.kept and frame.outer_emitting:
            self.out.append((number, group))
        if not frame.kept and not frame.taken:
            _drop_comment_before(self.out, frame.line)
        self.emitting = frame.outer_emitting


def _substitute_fixed(text: str, fixed: dict[str, str]) -> str:
    """Each macro the target fixes written in where it is used; its definition (which
    would otherwise choose the value) goes, with the comment above it."""
    for name, value in fixed.items():
        lines = [(0, [line]) for line in text.split("\n")]
        definitions = {i for i, (_, g) in enumerate(lines)
                       if re.match(rf"^\s*#\s*define\s+{re.escape(name)}\b", g[0])}
        drop = set(definitions)
        for i in definitions:
            drop |= _comment_above(lines, i)
        text = single_blank_lines([g[0] for i, (_, g) in enumerate(lines) if i not in drop])
        if not value:
            # An empty macro alone on its line before a closing bracket: the bracket
            # closes the line above instead.
            text = re.sub(rf"\n[ \t]*\b{re.escape(name)}\b[ \t]*(?=[),;])", "", text)
            text = re.sub(rf"\b{re.escape(name)}\b[ \t]*", "", text)
        else:
            text = re.sub(rf"\b{re.escape(name)}\b", value, text)
    return text


def _drop_unused_version_header(text: str) -> str:
    """<linux/version.h> goes with the last version check."""
    if re.search(r"\b(LINUX_VERSION_CODE|KERNEL_VERSION|LINUX_VERSION_(MAJOR|PATCHLEVEL|SUBLEVEL))\b", text):
        return text
    return re.sub(r"^#\s*include\s*<linux/version\.h>[^\n]*\n", "", text, flags=re.M)


def _first_word(rest: str) -> str:
    words = rest.split()
    if not words:
        raise ResolveError("#ifdef or #ifndef without a name")
    return words[0]


def _include_guards(logical: list[tuple[int, list[str]]]) -> set[str]:
    """The header's include guard, which stays as it is: a first directive `#ifndef X`
    right before `#define X`, whose #endif ends the file (nothing but comments after it)."""
    directives = [(i, DIRECTIVE.match(_joined(g))) for i, (_, g) in enumerate(logical) if DIRECTIVE.match(g[0])]
    if len(directives) < 3 or directives[0][1].group(1) != "ifndef":
        return set()
    words = directives[0][1].group(2).split()
    if not words or directives[1][1].group(1) != "define" or directives[1][1].group(2).split()[:1] != words[:1]:
        return set()
    depth = 0
    for index, directive in directives:
        depth += {"if": 1, "ifdef": 1, "ifndef": 1, "endif": -1}.get(directive.group(1), 0)
        if depth == 0:
            after = [g[0].strip() for _, g in logical[index + 1:]]
            code = [line for line in after if line and not line.startswith(("/*", "*", "//"))]
            return set() if code else {words[0]}
    return set()


def _value(condition: str, target: Target, macros: dict[str, _Macro], where: str,
           used: set[str], guards: set[str]) -> int | None:
    evaluator = _Evaluator(target, macros, where, guards)
    try:
        value = evaluator.value(condition)
    except Unresolved:
        return None
    used |= evaluator.used
    return value


def _record(kind: str, rest: str, macros: dict[str, _Macro]) -> None:
    match = DEFINITION.match(rest)
    if not match:
        raise ResolveError(f"#{kind} without a name")
    name = match.group(1)
    if kind == "undef":
        macros.pop(name, None)
        return
    params = [p.strip() for p in match.group(3).split(",")] if match.group(2) else None
    macros[name] = _Macro(params, TRAILING_COMMENT.sub(" ", match.group(4)).strip())


def _drop_spent_macros(out: list[tuple[int, list[str]]], used: set[str]) -> str:
    """The output, less the definitions of macros that only conditionals read and that
    nothing reads any more, each with the comment directly above it (it explained them)."""
    lines = [(number, group) for number, group in out]
    text_of = lambda keep: "\n".join(line for _, g in keep for line in g)  # noqa: E731
    for name in sorted(used):
        definitions = [i for i, (_, g) in enumerate(lines)
                       if DIRECTIVE.match(g[0]) and DIRECTIVE.match(g[0]).group(1) == "define"
                       and DEFINITION.match(_joined(g).split("define", 1)[1]).group(1) == name]
        rest = [g for i, (_, g) in enumerate(lines) if i not in definitions]
        if re.search(rf"\b{re.escape(name)}\b", text_of([(0, g) for g in rest])):
            continue
        drop = set(definitions)
        for i in definitions:
            drop |= _comment_above(lines, i)
        lines = [entry for i, entry in enumerate(lines) if i not in drop]
    return single_blank_lines([line for _, group in lines for line in group])


def single_blank_lines(lines: list[str]) -> str:
    """What a removal left: never two blank lines in a row, none at the start or right
    inside braces."""
    out: list[str] = []
    for line in lines:
        blank = not line.strip()
        if blank and (not out or not out[-1].strip() or out[-1].rstrip().endswith("{")):
            continue
        if not blank and line.lstrip().startswith("}") and len(out) > 1 and not out[-1].strip():
            out.pop()
        out.append(line)
    return "\n".join(out)


def _drop_comment_before(out: list[tuple[int, list[str]]], line: int) -> None:
    """A group that leaves nothing behind takes the comment right above it along."""
    if not out or out[-1][0] + len(out[-1][1]) != line:
        return
    for i in sorted(_comment_above(out, len(out)), reverse=True):
        del out[i]


def _comment_above(lines: list[tuple[int, list[str]]], index: int) -> set[int]:
    """The lines of the comment that ends right above line `index`, if one does."""
    i = index - 1
    if i < 0 or not lines[i][1][0].rstrip().endswith("*/"):
        return set()
    block = set()
    while i >= 0:
        block.add(i)
        if lines[i][1][0].lstrip().startswith("/*"):
            return block
        i -= 1
    return set()
