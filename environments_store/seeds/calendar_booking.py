import random

from spade_env import ToolEnv


class MeetingBookingEnv(ToolEnv):
    """Calendar scheduling: book the earliest hour when a whole team is free.

    Each person has busy hours on each weekday. The agent must look up who is in
    the asked team, read every member's busy hours on the asked day, find the
    earliest one-hour slot between 9:00 and 17:00 free for all, book it (booking
    fails if anyone is busy), and answer the booking's confirmation code with
    <answer>CODE</answer>."""

    max_turns = 12

    PEOPLE = ["alice", "bilal", "chen", "dana", "emeka", "fatima", "goran", "hana", "ivo"]
    DAYS = ["monday", "tuesday", "wednesday", "thursday", "friday"]
    TEAMS = ["design", "infra", "sales"]

    def reset(self, seed=None, options=None):
        rng = random.Random(seed)
        people = self.PEOPLE[:]
        rng.shuffle(people)
        self.teams = {t: sorted(people[3 * i: 3 * i + 3]) for i, t in enumerate(self.TEAMS)}
        while True:
            self.busy = {(p, d): sorted(rng.sample(range(9, 17), rng.randint(2, 5)))
                         for p in self.PEOPLE for d in self.DAYS}
            self.team, self.day = rng.choice(self.TEAMS), rng.choice(self.DAYS)
            free = [h for h in range(9, 17)
                    if all(h not in self.busy[(p, self.day)] for p in self.teams[self.team])]
            if free and free[0] >= 10:  # the obvious 9:00 guess must not work
                break
        self.slot = free[0]
        self.salt = rng.randint(100, 999)
        self.bookings = {}
        self.expected_answer = self._code(self.day, self.slot)
        obs = (f"Book a one-hour meeting for everyone in the {self.team} team on {self.day}, at the "
               "earliest whole hour from 9 to 16 (the meeting must end by 17:00) when all of them "
               "are free, then report the booking's confirmation code.\n" + self.describe_tools()
               + "\nAnswer with <answer>CODE</answer>.")
        return obs, {}

    def _code(self, day, hour):
        return f"BK-{day[:3].upper()}{hour:02d}-{self.salt}"

    def tool_list_team(self, team: str) -> list:
        """The members of a team.

        Args:
            team: team name, e.g. design
        """
        if team not in self.teams:
            raise ValueError(f"unknown team {team!r}; teams: {', '.join(self.TEAMS)}")
        return self.teams[team]

    def tool_get_busy_hours(self, person: str, day: str) -> str:
        """The hours (start times) at which a person is busy on a weekday.

        Args:
            person: lower-case first name
            day: weekday name, e.g. monday
        """
        if (person, day) not in self.busy:
            raise ValueError("unknown person or day")
        hours = ", ".join(f"{h}:00" for h in self.busy[(person, day)])
        return f"{person} is busy on {day} at: {hours}"

    def tool_book_meeting(self, day: str, start_hour: int, attendees: list) -> str:
        """Book a one-hour meeting; fails if an attendee is busy then.

        Args:
            day: weekday name
            start_hour: start time as an hour from 9 to 16
            attendees: list of lower-case first names
        """
        if day not in self.DAYS or not isinstance(start_hour, int) or not 9 <= start_hour <= 16:
            raise ValueError("day must be a weekday and start_hour an integer from 9 to 16")
        if not isinstance(attendees, list) or not attendees:
            raise ValueError("attendees must be a non-empty list of names")
        names = [str(a).strip().lower() for a in attendees]
        if any(n not in self.PEOPLE for n in names):
            raise ValueError("unknown attendee")
        clash = [n for n in names if start_hour in self.busy[(n, day)]]
        if clash:
            return f"Booking failed: {', '.join(clash)} busy at {start_hour}:00 on {day}."
        code = self._code(day, start_hour)
        self.bookings[code] = (day, start_hour, sorted(names))
        return f"Booked {day} {start_hour}:00-{start_hour + 1}:00 for {', '.join(sorted(names))}. Confirmation code: {code}"

    def check_answer(self, answer):
        # The code only counts if the right meeting (whole team, earliest slot) was booked.
        booked = self.bookings.get(answer.strip().upper())
        return (answer.strip().upper() == self.expected_answer
                and booked == (self.day, self.slot, self.teams[self.team]))

    def hint(self):
        return ("List the team, fetch each member's busy hours for that day, take the first "
                "hour from 9 that appears in nobody's list, and book it with all members.")

    def solution(self):
        calls = [{"name": "list_team", "arguments": {"team": self.team}}]
        calls += [{"name": "get_busy_hours", "arguments": {"person": p, "day": self.day}}
                  for p in self.teams[self.team]]
        calls.append({"name": "book_meeting", "arguments": {
            "day": self.day, "start_hour": self.slot, "attendees": self.teams[self.team]}})
        return calls + [self.expected_answer]
