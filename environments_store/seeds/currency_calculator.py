import random

from spade_env import ToolEnv


class CurrencyChainEnv(ToolEnv):
    """Unit conversion through a chain of fictional currencies, with a calculator tool.

    A market uses made-up currencies whose exchange rates are only available
    through a rate tool, and only between neighbouring currencies of a hidden
    chain. The agent must discover the path, fetch the rates, and compute the
    value of a mixed purse in the target currency (the calculator helps).
    Answer with <answer>N</answer>."""

    max_turns = 12

    NAMES = ["zorb", "quill", "florin", "tallow", "drachm", "pellet", "brass", "nimbus"]

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        self.chain = rng.sample(self.NAMES, 4)  # rates exist only between neighbours
        self.rates = {}
        for a, b in zip(self.chain, self.chain[1:]):
            self.rates[(a, b)] = rng.randint(2, 6)  # 1 a = r b
        src, mid, dst = self.chain[0], self.chain[1], self.chain[2]
        if rng.random() < 0.5:  # sometimes the target is the far end, a three-step path
            dst = self.chain[3]
        self.src, self.mid, self.dst = src, mid, dst
        self.amount_src, self.amount_mid = rng.randint(3, 40), rng.randint(3, 40)
        path = self.chain[: self.chain.index(dst) + 1]
        factor_src = 1
        for a, b in zip(path, path[1:]):
            factor_src *= self.rates[(a, b)]
        factor_mid = factor_src // self.rates[(src, mid)]
        self.expected_answer = self.amount_src * factor_src + self.amount_mid * factor_mid
        self.path = path
        obs = (f"A traveller holds {self.amount_src} {src}s and {self.amount_mid} {mid}s. How many "
               f"{dst}s are they worth in total? Exchange rates exist only between some pairs "
               "of currencies; use the tools to find a path.\n" + self.describe_tools()
               + "\nAnswer with <answer>N</answer>, N a whole number.")
        return obs, {}

    def tool_list_pairs(self, currency: str) -> list:
        """Currencies that have a direct exchange rate with the given one.

        Args:
            currency: a currency name, e.g. zorb
        """
        c = currency.strip().lower()
        if c not in self.chain and c[:-1] in self.chain:  # accept plurals like 'zorbs'
            c = c[:-1]
        if c not in self.chain:
            raise ValueError(f"unknown currency {currency!r}")
        return sorted({b for a, b in self.rates if a == c} | {a for a, b in self.rates if b == c})

    def tool_get_rate(self, from_currency: str, to_currency: str) -> str:
        """How many units of to_currency one unit of from_currency buys (direct pairs only).

        Args:
            from_currency: currency to convert from
            to_currency: currency to convert to
        """
        a, b = from_currency.strip().lower(), to_currency.strip().lower()
        if (a, b) in self.rates:
            return f"1 {a} = {self.rates[(a, b)]} {b}"
        if (b, a) in self.rates:
            return f"1 {a} = 1/{self.rates[(b, a)]} {b}"
        return f"No direct rate between {a} and {b}."

    def tool_calculate(self, expression: str) -> str:
        """Evaluate an arithmetic expression with + - * / and parentheses.

        Args:
            expression: e.g. '12 * (3 + 4)'
        """
        tokens = _tokens(expression)
        value, rest = _expr(tokens)
        if rest:
            raise ValueError("could not parse the whole expression")
        return str(int(value) if value == int(value) else value)

    def hint(self):
        return ("Call list_pairs to walk from each currency you hold to the target, note the "
                "rate of each hop, multiply along the path, and add the two converted amounts.")

    def solution(self):
        calls = [{"name": "list_pairs", "arguments": {"currency": c}} for c in self.path[:-1]]
        calls += [{"name": "get_rate", "arguments": {"from_currency": a, "to_currency": b}}
                  for a, b in zip(self.path, self.path[1:])]
        return calls + [str(self.expected_answer)]


# A tiny recursive-descent calculator, so the tool never evaluates Python code.
def _tokens(text):
    out, num = [], ""
    for ch in str(text)[:200] + " ":
        if ch.isdigit() or ch == ".":
            num += ch
            continue
        if num:
            out.append(float(num))
            num = ""
        if ch in "+-*/()":
            out.append(ch)
        elif not ch.isspace():
            raise ValueError(f"unexpected character {ch!r}")
    return out


def _expr(tokens):
    value, tokens = _term(tokens)
    while tokens and tokens[0] in ("+", "-"):
        op, (rhs, tokens) = tokens[0], _term(tokens[1:])
        value = value + rhs if op == "+" else value - rhs
    return value, tokens


def _term(tokens):
    value, tokens = _atom(tokens)
    while tokens and tokens[0] in ("*", "/"):
        op, (rhs, tokens) = tokens[0], _atom(tokens[1:])
        value = value * rhs if op == "*" else value / rhs
    return value, tokens


def _atom(tokens):
    if not tokens:
        raise ValueError("expression ended early")
    head = tokens[0]
    if head == "-":
        value, rest = _atom(tokens[1:])
        return -value, rest
    if head == "(":
        value, rest = _expr(tokens[1:])
        if not rest or rest[0] != ")":
            raise ValueError("missing )")
        return value, rest[1:]
    if isinstance(head, float):
        return head, tokens[1:]
    raise ValueError(f"unexpected {head!r}")
