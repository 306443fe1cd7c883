#!/usr/bin/python3
"""An oracle for business time (sql/functions/086_business_time.sql): random calendars in zones with DST
changes, random instants and lengths, the server's business_add, business_add_days and business_between
against a reference written here from the rule alone: Python's zoneinfo, one minute at a time. Slow, and
obviously right.

    oracle.py [--cases N] [--calendars K] [--seed S]     (the database: PRESCIENT_DATABASE_URL)

By default 2 000 cases over 4 calendars; with PRESCIENT_SOAK=1 (scripts/test.sh --soak), 100 000 over 100.

Every mismatch is printed with its calendar, start and length; exit 1 if there is one."""
import argparse
import bisect
import datetime as dt
import json
import os
import random
import sys
from itertools import accumulate
from zoneinfo import ZoneInfo

import psycopg

# Zones with DST changes at different hours and of different sizes: the southern hemisphere (Sydney,
# Santiago, Auckland), a 30-minute offset (Adelaide), a 30-minute change (Lord Howe), a change at midnight
# (Havana, Santiago), one on a Friday (Jerusalem), none (Kolkata).
ZONES = ["Europe/Berlin", "America/New_York", "Europe/London", "Australia/Sydney", "Australia/Adelaide",
         "Australia/Lord_Howe", "America/Santiago", "Pacific/Auckland", "America/Havana", "Asia/Jerusalem",
         "America/Los_Angeles", "Asia/Kolkata"]
WEEKDAYS = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
NTH = ["first", "second", "third", "fourth", "last"]
# The reference's window: every instant a case starts at or reaches lies in it.
WINDOW_START = dt.datetime(2025, 12, 20, tzinfo=dt.timezone.utc)
WINDOW_END = dt.datetime(2027, 7, 1, tzinfo=dt.timezone.utc)
CASE_START = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
EPOCH_DAY = dt.date(1970, 1, 1)
CASE_END = dt.datetime(2026, 12, 31, tzinfo=dt.timezone.utc)


def hhmm(minute):
    return f"{minute // 60:02d}:{minute % 60:02d}"


def interval_minutes(text):
    """'HH:MM-HH:MM' as (open, close) minutes from the day's start; close after midnight past 1440."""
    a, b = text.split("-")
    o = int(a[:2]) * 60 + int(a[3:])
    c = int(b[:2]) * 60 + int(b[3:])
    return o, (c + 1440 if c <= o else c)


def random_intervals(rng, allow_cross):
    """One day's intervals: none, one or two, on minutes DST changes like (00:00 to 04:00 included)."""
    shape = rng.random()
    if shape < 0.2:
        return []
    grid = rng.choice([60, 30, 15, 1])
    def t(lo, hi):
        return rng.randrange(lo // grid, hi // grid + 1) * grid
    if shape < 0.45:  # the early hours, where most DST changes fall
        o = t(0, 240)
        return [f"{hhmm(o)}-{hhmm(t(o + grid, 600))}"]
    if shape < 0.75:
        o = t(360, 720)
        return [f"{hhmm(o)}-{hhmm(t(o + 60, 1380))}"]
    if shape < 0.9 or not allow_cross:
        o1 = t(0, 600)
        c1 = t(o1 + grid, 720)
        o2 = t(c1 + grid, 1200)
        c2 = t(o2 + grid, 1440)
        return [f"{hhmm(o1)}-{hhmm(c1)}", f"{hhmm(o2)}-{'24:00' if c2 >= 1440 else hhmm(c2)}"]
    # Across midnight, closing early the next morning.
    o = t(1080, 1380)
    return [f"{hhmm(o)}-{hhmm(t(0, 180))}"]


def overlapping_week(hours):
    spans = []
    for i, day in enumerate(WEEKDAYS):
        for text in hours.get(day, []):
            o, c = interval_minutes(text)
            spans.append((i * 1440 + o, i * 1440 + c))
    for x in range(len(spans)):
        for y in range(x + 1, len(spans)):
            (a1, b1), (a2, b2) = spans[x], spans[y]
            for shift in (0, 10080, -10080):
                if a1 < b2 + shift and a2 + shift < b1:
                    return True
    return False


def random_calendar(rng):
    while True:
        hours = {}
        for day in WEEKDAYS:
            intervals = random_intervals(rng, allow_cross=True)
            if intervals:
                hours[day] = intervals
        if hours and not overlapping_week(hours):
            break
    holidays, days = [], []
    for _ in range(rng.randrange(0, 12)):
        kind = rng.random()
        if kind < 0.4:
            d = dt.date(2026, 1, 1) + dt.timedelta(days=rng.randrange(0, 500))
            holidays.append(d.isoformat())
        elif kind < 0.55:
            d = dt.date(2026, 1, 1) + dt.timedelta(days=rng.randrange(0, 500))
            holidays.append(f"{d.isoformat()}..{(d + dt.timedelta(days=rng.randrange(0, 10))).isoformat()}")
        elif kind < 0.8:
            m = rng.randrange(1, 13)
            holidays.append(f"{m:02d}-{rng.randrange(1, 29):02d}")
        else:
            holidays.append(f"{rng.choice(NTH)} {rng.choice(WEEKDAYS)} of {rng.choice(MONTHS)}")
    for _ in range(rng.randrange(0, 6)):
        d = dt.date(2026, 1, 1) + dt.timedelta(days=rng.randrange(0, 500))
        spec = d.isoformat() if rng.random() < 0.7 else f"{d.month:02d}-{min(d.day, 28):02d}"
        days.append({"date": spec, "hours": random_intervals(rng, allow_cross=False)})
    return {"hours": hours, "holidays": holidays, "days": days}


class Reference:
    """The rule, minute by minute over the window."""

    def __init__(self, zone, definition):
        self.zone = ZoneInfo(zone)
        self.definition = definition
        self.start = int(WINDOW_START.timestamp()) // 60
        count = (int(WINDOW_END.timestamp()) // 60) - self.start
        self.hours_cache = {}
        flags = bytearray(count)
        self.open_days = set()
        # An hour whose first and last minutes have one offset and one fold is read with that offset, minute
        # by minute; an hour with a change in it asks zoneinfo of each minute.
        for hour in range(0, count, 60):
            first, last = self.wall(self.start + hour), self.wall(self.start + min(hour + 59, count - 1))
            uniform = first.utcoffset() == last.utcoffset() and first.fold == last.fold
            if uniform and first.fold == 1:
                continue  # wall times seen before: closed
            offset = int(first.utcoffset().total_seconds()) // 60
            for i in range(hour, min(hour + 60, count)):
                m = self.start + i
                day = self.open_source_at(m + offset) if uniform else self.open_source(m)
                if day is not None:
                    flags[i] = 1
                    self.open_days.add(day)
        self.flags = flags
        self.cum = [0] + list(accumulate(flags))
        self.open_day_list = sorted(self.open_days)

    def rule_names(self, spec, day):
        if ".." in spec:
            a, b = spec.split("..")
            return dt.date.fromisoformat(a) <= day <= dt.date.fromisoformat(b)
        if len(spec) == 10:
            return day == dt.date.fromisoformat(spec)
        if len(spec) == 5:
            return (day.month, day.day) == (int(spec[:2]), int(spec[3:]))
        nth, weekday, _, month = spec.split()
        if day.month != MONTHS.index(month) + 1 or day.weekday() != WEEKDAYS.index(weekday):
            return False
        if nth == "last":
            return (day + dt.timedelta(days=7)).month != day.month
        return (day.day - 1) // 7 + 1 == NTH.index(nth) + 1

    def hours_of(self, day):
        """The intervals that open on a day, by the precedence the rule gives."""
        if day in self.hours_cache:
            return self.hours_cache[day]
        exact = lambda spec: len(spec) == 10 or ".." in spec
        found = None
        for wanted in ("day-exact", "holiday-exact", "day-yearly", "holiday-yearly"):
            items = self.definition["days"] if wanted.startswith("day") else \
                [{"date": h, "hours": []} for h in self.definition["holidays"]]
            for item in items:
                if exact(item["date"]) == wanted.endswith("exact") and self.rule_names(item["date"], day):
                    found = item["hours"]
                    break
            if found is not None:
                break
        if found is None:
            found = self.definition["hours"].get(WEEKDAYS[day.weekday()], [])
        result = [interval_minutes(t) for t in found]
        self.hours_cache[day] = result
        return result

    def wall(self, minute):
        return dt.datetime.fromtimestamp(minute * 60, self.zone)

    def open_source(self, minute):
        """The day whose interval holds this minute, or None when it is closed."""
        local = self.wall(minute)
        if local.fold == 1:
            return None  # a wall time seen before
        return self.open_source_at(int(local.replace(tzinfo=dt.timezone.utc).timestamp()) // 60)

    def open_source_at(self, local_minute):
        """The same, from the wall time as minutes since 1970-01-01 00:00 (a wall time seen for the first time)."""
        of_day = local_minute % 1440
        today = EPOCH_DAY + dt.timedelta(days=local_minute // 1440)
        for o, c in self.hours_of(today):
            if o <= of_day < c:
                return today
        yesterday = today - dt.timedelta(days=1)
        for o, c in self.hours_of(yesterday):
            if o <= of_day + 1440 < c:
                return yesterday
        return None

    def index(self, minute):
        i = minute - self.start
        assert 0 <= i < len(self.flags), minute
        return i

    def add(self, minute, length):
        target = self.cum[self.index(minute)] + length
        return self.start + bisect.bisect_left(self.cum, target)

    def between(self, a, b):
        return self.cum[self.index(b)] - self.cum[self.index(a)]

    def add_days(self, minute, days):
        local = self.wall(minute)
        at = bisect.bisect_right(self.open_day_list, local.date()) + days - 1
        want = dt.datetime.combine(self.open_day_list[at], local.time().replace(tzinfo=None, fold=0))
        m = int(want.replace(tzinfo=dt.timezone.utc).timestamp()) // 60 - 15 * 60
        while self.wall(m).replace(tzinfo=None, fold=0) < want:
            m += 1
        i = self.index(m)
        if self.flags[i] or self.flags[i - 1]:
            return m
        while not self.flags[i]:
            i += 1
        return self.start + i


def transitions(zone, first, last):
    """The minutes at which a zone's offset changes between two minutes (hourly steps, then the minute)."""
    tz = ZoneInfo(zone)
    offset = lambda m: dt.datetime.fromtimestamp(m * 60, tz).utcoffset()
    found = []
    for hour in range(first, last, 60):
        if offset(hour) != offset(hour + 60):
            m = hour
            while offset(m) == offset(hour):
                m += 1
            found.append(m)
    return found


def iso(minute):
    return dt.datetime.fromtimestamp(minute * 60, dt.timezone.utc).isoformat()


def main():
    parser = argparse.ArgumentParser()
    soak = os.environ.get("PRESCIENT_SOAK") == "1"
    parser.add_argument("--cases", type=int, default=100000 if soak else 2000)
    parser.add_argument("--calendars", type=int, default=100 if soak else 4)
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    rng = random.Random(seed)
    print(f"oracle.py: seed {seed}, {args.calendars} calendars, {args.cases} cases")
    mismatches = 0
    per_calendar = max(1, args.cases // args.calendars)
    first = int(CASE_START.timestamp()) // 60
    last = int(CASE_END.timestamp()) // 60
    with psycopg.connect(os.environ["PRESCIENT_DATABASE_URL"], autocommit=True) as db:
        for k in range(args.calendars):
            zone = ZONES[k % len(ZONES)] if k < len(ZONES) else rng.choice(ZONES)
            definition = random_calendar(rng)
            name = f"oracle-{k}"
            db.execute("SELECT prescient.calendar_set(%s, %s, %s::jsonb)", (name, zone, json.dumps(definition)))
            ref = Reference(zone, definition)
            changes = transitions(zone, first, last)
            cases = []
            for _ in range(per_calendar):
                kind = rng.random()
                # Starts anywhere in the year, and for half the cases in the three days before one of the
                # zone's DST changes or just after it: in its gaps and repeats too.
                start = rng.randrange(first, last)
                if changes and rng.random() < 0.5:
                    start = rng.choice(changes) + rng.randrange(-3 * 1440, 180)
                if kind < 0.45:
                    length = rng.choice([rng.randrange(1, 600), rng.randrange(1, 60 * 8 * 60)])
                    # Within the reference's window, however little the calendar is open.
                    room = ref.cum[-1] - ref.cum[ref.index(start)] - 1
                    cases.append(("add", start, min(length, max(1, room // 2))))
                elif kind < 0.75:
                    days = rng.choice([1, 1, 2, 3, 5, rng.randrange(1, 61)])
                    room = len(ref.open_day_list) - bisect.bisect_right(ref.open_day_list, ref.wall(start).date()) - 3
                    cases.append(("days", start, min(days, max(1, room))))
                else:
                    cases.append(("between", start, rng.randrange(1, 60 * 24 * 90)))
            for kind, start, n in cases:
                if kind == "add":
                    want = ref.add(start, n)
                    got = db.execute("SELECT extract(epoch FROM prescient.business_add(%s, to_timestamp(%s), %s * interval '1 minute'))",
                                     (name, start * 60, n)).fetchone()[0]
                elif kind == "days":
                    want = ref.add_days(start, n)
                    got = db.execute("SELECT extract(epoch FROM prescient.business_add_days(%s, to_timestamp(%s), %s))",
                                     (name, start * 60, n)).fetchone()[0]
                else:
                    want = ref.between(start, start + n)
                    got = db.execute("SELECT extract(epoch FROM prescient.business_between(%s, to_timestamp(%s), to_timestamp(%s)))",
                                     (name, start * 60, (start + n) * 60)).fetchone()[0]
                got_minutes = float(got) / 60
                if kind != "between":
                    ok = got_minutes == want
                    shown = f"got {iso(int(got_minutes)) if got_minutes == int(got_minutes) else got}, want {iso(want)}"
                else:
                    ok = got_minutes == want
                    shown = f"got {got_minutes} min, want {want} min"
                if not ok:
                    mismatches += 1
                    if mismatches <= 20:
                        print(f"MISMATCH {kind} calendar {name} ({zone}) from {iso(start)} n={n}: {shown}\n"
                              f"  definition {json.dumps(definition)}")
            print(f"oracle.py: {name} ({zone}): {len(cases)} cases")
    print(f"oracle.py: {mismatches} mismatches in {per_calendar * args.calendars} cases (seed {seed})")
    return 1 if mismatches else 0


if __name__ == "__main__":
    sys.exit(main())
