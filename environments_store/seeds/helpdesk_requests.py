import random
from typing import Literal

from spade_env import ToolEnv


class HelpdeskRequestsEnv(ToolEnv):
    """Help desk, multi-turn: four requests from a support lead, revealed one at a time.

    A ticket queue (ids, customers, topics, priorities, assignees, notes) is hidden
    behind tools. The lead's requests arrive one after another, each shown only once
    the previous one is carried out: assign a customer's open ticket to a colleague,
    raise its priority, note and close it, then report how many tickets are still
    open. The ticket id is never given: it must be found by searching and reused.
    Tools: search_tickets, get_ticket, assign, set_priority, add_note, close_ticket,
    reopen_ticket, list_tickets (and an unneeded get_customer)."""

    max_turns = 12

    CUSTOMERS = ["acorn ltd", "birch & co", "cobalt inc", "delta farms", "ember labs",
                 "fjord air", "granite bank", "harbor taxi", "iris media", "juniper spa"]
    TOPICS = ["billing", "login", "shipping", "refund", "outage", "invoice"]
    AGENTS = ["mira", "tomas", "yuki", "omar", "lena"]
    PRIORITIES = ["low", "normal", "high", "urgent"]

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        ids = rng.sample(range(1000, 9999), len(self.CUSTOMERS) + 4)
        self.tickets = {}
        for i, tid in enumerate(ids):
            customer = self.CUSTOMERS[i % len(self.CUSTOMERS)]
            self.tickets[f"T{tid}"] = {
                "customer": customer, "topic": rng.choice(self.TOPICS),
                "status": rng.choice(["open", "open", "closed"]),
                "priority": rng.choice(self.PRIORITIES[:3]),
                "assignee": rng.choice(self.AGENTS), "notes": []}
        self.ticket = rng.choice(sorted(self.tickets))
        t = self.tickets[self.ticket]
        # The asked ticket is the customer's only open one, so the request is unambiguous.
        t["status"], t["priority"] = "open", rng.choice(["low", "normal"])
        for tid, other in self.tickets.items():
            if tid != self.ticket and other["customer"] == t["customer"]:
                other["status"] = "closed"
        self.agent = rng.choice([a for a in self.AGENTS if a != t["assignee"]])
        self.priority = rng.choice(["high", "urgent"])
        self.note = f"resolved: {t['topic']} case {rng.randint(10, 99)}"
        self.counted_after_close = False
        self.user_messages = [
            f"{t['customer'].title()} has an open {t['topic']} ticket. Find it and assign it "
            f"to {self.agent}.",
            f"Raise that ticket's priority to {self.priority}.",
            f"Add the note '{self.note}' to it, then close it.",
            "How many tickets are still open now? Answer with <answer>N</answer>.",
        ]
        self.message_criteria = [
            lambda: t["assignee"] == self.agent,
            lambda: t["priority"] == self.priority,
            lambda: self.note in t["notes"] and t["status"] == "closed",
            lambda: self.counted_after_close,
        ]
        self.expected_answer = sum(x["status"] == "open" for x in self.tickets.values()) - 1
        return self.user_messages[0] + "\n" + self.describe_tools(), {}

    def _get(self, ticket_id: str) -> dict:
        if ticket_id not in self.tickets:
            raise ValueError(f"no ticket {ticket_id!r}")
        return self.tickets[ticket_id]

    def tool_search_tickets(self, customer: str) -> list:
        """Tickets of customers whose name contains the text.

        Args:
            customer: part of a customer name, e.g. 'acorn'
        """
        q = customer.strip().lower()
        return [{"id": tid, "customer": t["customer"], "status": t["status"]}
                for tid, t in sorted(self.tickets.items()) if q and q in t["customer"]]

    def tool_get_ticket(self, ticket_id: str) -> dict:
        """Every field of one ticket.

        Args:
            ticket_id: e.g. T1234
        """
        return dict(self._get(ticket_id), id=ticket_id)

    def tool_assign(self, ticket_id: str, agent: str) -> str:
        """Assign a ticket to a support agent.

        Args:
            ticket_id: e.g. T1234
            agent: the agent's first name
        """
        t = self._get(ticket_id)
        if agent not in self.AGENTS:
            raise ValueError(f"no agent {agent!r}; agents: {', '.join(self.AGENTS)}")
        t["assignee"] = agent
        return f"{ticket_id} assigned to {agent}"

    def tool_set_priority(self, ticket_id: str,
                          priority: Literal["low", "normal", "high", "urgent"]) -> str:
        """Change a ticket's priority.

        Args:
            ticket_id: e.g. T1234
            priority: low, normal, high or urgent
        """
        t = self._get(ticket_id)
        if priority not in self.PRIORITIES:
            raise ValueError(f"unknown priority {priority!r}")
        t["priority"] = priority
        return f"{ticket_id} priority is now {priority}"

    def tool_add_note(self, ticket_id: str, text: str) -> str:
        """Add a note to an open ticket.

        Args:
            ticket_id: e.g. T1234
            text: the note
        """
        t = self._get(ticket_id)
        if t["status"] != "open":
            raise ValueError(f"{ticket_id} is closed; reopen it to add notes")
        t["notes"].append(text.strip())
        return f"note added to {ticket_id}"

    def tool_close_ticket(self, ticket_id: str) -> str:
        """Close an open ticket.

        Args:
            ticket_id: e.g. T1234
        """
        t = self._get(ticket_id)
        if t["status"] != "open":
            raise ValueError(f"{ticket_id} is already closed")
        t["status"] = "closed"
        return f"{ticket_id} closed"

    def tool_reopen_ticket(self, ticket_id: str) -> str:
        """Reopen a closed ticket.

        Args:
            ticket_id: e.g. T1234
        """
        t = self._get(ticket_id)
        t["status"] = "open"
        return f"{ticket_id} reopened"

    def tool_list_tickets(self, status: Literal["open", "closed"]) -> list:
        """Ids of all tickets with a status.

        Args:
            status: open or closed
        """
        if status not in ("open", "closed"):
            raise ValueError("status is open or closed")
        if status == "open" and self.tickets[self.ticket]["status"] == "closed":
            self.counted_after_close = True
        return sorted(tid for tid, t in self.tickets.items() if t["status"] == status)

    def tool_get_customer(self, name: str) -> str:
        """A customer's account tier.

        Args:
            name: customer name
        """
        if name.strip().lower() not in self.CUSTOMERS:
            raise ValueError(f"no customer {name!r}")
        return ["bronze", "silver", "gold"][self.CUSTOMERS.index(name.strip().lower()) % 3]

    def hint(self):
        return ("Search by the customer's name to get the ticket id and reuse it for every "
                "request; add the note before closing; list open tickets only after closing.")

    def solution(self):
        tid = self.ticket
        customer = self.tickets[tid]["customer"]
        return [{"name": "search_tickets", "arguments": {"customer": customer}},
                {"name": "assign", "arguments": {"ticket_id": tid, "agent": self.agent}},
                {"name": "set_priority", "arguments": {"ticket_id": tid, "priority": self.priority}},
                {"name": "add_note", "arguments": {"ticket_id": tid, "text": self.note}},
                {"name": "close_ticket", "arguments": {"ticket_id": tid}},
                {"name": "list_tickets", "arguments": {"status": "open"}},
                str(self.expected_answer)]
