"""The demo's conversations: who asks what, when, in which mode, and what goes wrong.

36 conversations over four ISO weeks (2026-W44 to 2026-W47): 26 with the
interactive ``concierge`` agent (tool-call budget 25) and 10 with the
background ``back_office`` agent (budget 100). Most booking requests are
played twice, once with ``blind`` and once with ``corrective`` error messages,
so ``loopscope compare --tag mode=...`` shows what the hints buy; two are
played in ``crash`` mode. docs/demo.md and sample_logs/EXPECTED.md list what
each conversation shows and the figures they add up to.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

from loopscope.cli.demo import policies as p
from loopscope.cli.demo.hotel import Hotel
from loopscope.cli.demo.model import Policy

AGENT_BUDGETS = {"concierge": 25, "back_office": 100}
MODES = ("crash", "blind", "corrective")

Event = Callable[[Hotel], None]


@dataclass(frozen=True)
class PromptSpec:
    """One user prompt and how its loop ends.

    Args:
        text: what the user (or the scheduler, for the back office) asks.
        policy: what the scripted model does.
        fate: ``"exit"`` (the loop runs to its exit), ``"died"`` (the process
            dies after the tool calls of step ``last_step``: no loop_exit) or
            ``"restart"`` (it dies there and a new process resumes the same
            prompt from its checkpoint, re-running that step's tool calls).
        last_step: see ``fate``; a restart resumes from step 0's response, so
            it must be 0 there.
        idempotency_lost: on restart, the idempotency store never got the
            results of the interrupted step, so its calls run again.
        events: world events run just before the tool calls of a step
            (step -> event), e.g. another channel booking the same room.
    """

    text: str
    policy: Policy
    fate: str = "exit"
    last_step: int = 0
    idempotency_lost: bool = False
    events: dict[int, Event] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.fate not in ("exit", "died", "restart"):
            raise ValueError(f"unknown fate {self.fate!r}")
        if self.fate == "restart" and self.last_step != 0:
            raise ValueError("a restart resumes from the first response: last_step must be 0")


@dataclass(frozen=True)
class ConversationSpec:
    """One conversation: its id, agent, mode, start time, setup and prompts."""

    conversation_id: str
    agent: str
    mode: str
    scenario: str
    start: dt.datetime
    prompts: tuple[PromptSpec, ...]
    setup: Event | None = None
    gateway_failures: int = 0


def _at(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=dt.timezone.utc)


def _bookings(*rows: tuple[str, str, str, str]) -> Event:
    def setup(hotel: Hotel) -> None:
        for room, check_in, check_out, guest in rows:
            hotel.book_elsewhere(room, check_in, check_out, guest)

    return setup


def _conv(cid: str, agent: str, mode: str, scenario: str, start: str, *prompts: PromptSpec, **kw: object) -> ConversationSpec:
    return ConversationSpec(cid, agent, mode, scenario, _at(start), tuple(prompts), **kw)  # type: ignore[arg-type]


def _twins(
    agent: str,
    scenarios: tuple[str, str],
    corrective: tuple[str, str],
    blind: tuple[str, str],
    *prompts: PromptSpec,
    **kw: object,
) -> tuple[ConversationSpec, ConversationSpec]:
    """The same request played once with corrective and once with blind error messages.

    ``scenarios``, ``corrective`` and ``blind`` are (corrective, blind) scenario names and
    (conversation id, start) pairs; the prompts (policies are stateless) and ``kw`` are shared.
    """
    return (
        _conv(corrective[0], agent, "corrective", scenarios[0], corrective[1], *prompts, **kw),
        _conv(blind[0], agent, "blind", scenarios[1], blind[1], *prompts, **kw),
    )


_ARRIVALS_1027 = _bookings(
    ("S-101", "2026-10-27", "2026-10-29", "Hana Sato"),
    ("D-201", "2026-10-27", "2026-10-30", "Ivo Novak"),
    ("X-301", "2026-10-27", "2026-10-28", "Jon Berg"),
)
_ARRIVALS_1031 = _bookings(
    ("S-102", "2026-10-31", "2026-11-01", "Kai Wong"),
    ("D-202", "2026-10-31", "2026-11-02", "Lea Fischer"),
    ("D-203", "2026-10-31", "2026-11-03", "Mo Salah"),
)
_ARRIVALS_1120 = _bookings(
    ("S-103", "2026-11-20", "2026-11-22", "Nia Adeyemi"),
    ("D-201", "2026-11-20", "2026-11-21", "Oskar Lind"),
    ("D-204", "2026-11-20", "2026-11-23", "Pia Moreau"),
)
_ARRIVALS_1121 = _bookings(
    ("S-101", "2026-11-21", "2026-11-23", "Quinn Park"),
    ("D-202", "2026-11-21", "2026-11-22", "Rui Costa"),
    ("X-301", "2026-11-21", "2026-11-24", "Sara Nilsson"),
)
_ONE_GUEST = _bookings(("D-201", "2026-11-20", "2026-11-22", "Tomas Weber"))
_TWO_GUESTS = _bookings(
    ("S-101", "2026-11-14", "2026-11-16", "Uma Rao"),
    ("D-203", "2026-11-14", "2026-11-15", "Vic Duarte"),
)
_NEW_YEAR_SUITE = _bookings(("X-301", "2026-12-30", "2027-01-03", "Wen Li"))

# Fridays from December to June: more weekends than a budget of 25 lets the
# model check, five at a time.
_FRIDAYS = tuple((dt.date(2026, 12, 4) + dt.timedelta(weeks=i)).isoformat() for i in range(30))


def _race(room: str, check_in: str, check_out: str) -> dict[int, Event]:
    """Another channel books ``room`` just before step 1 (after the model saw it free)."""
    return {1: lambda hotel: hotel.book_elsewhere(room, check_in, check_out, "front desk walk-in")}


CONVERSATIONS: tuple[ConversationSpec, ...] = (
    # ---- 2026-W44 ---------------------------------------------------------
    _conv("c01-date-corrective", "concierge", "corrective", "date_fixed_on_retry", "2026-10-26T09:12:00",
          PromptSpec("Book a double room checking in next friday to 2026-11-01 for Ana Silva.",
                     p.book_natural_date("next friday", "2026-10-30", "2026-11-01", "double", "Ana Silva",
                                         blind_guesses=("10-30-2026", "October 30, 2026")))),
    _conv("c02-date-blind", "concierge", "blind", "date_fixed_on_retry", "2026-10-26T11:40:00",
          PromptSpec("Book a double room checking in next friday to 2026-11-01 for Ben Okafor.",
                     p.book_natural_date("next friday", "2026-10-30", "2026-11-01", "double", "Ben Okafor",
                                         blind_guesses=("10-30-2026", "October 30, 2026")))),
    _conv("b01-arrivals-corrective", "back_office", "corrective", "nightly_confirmations", "2026-10-26T23:30:00",
          PromptSpec("Nightly job: send confirmations for arrivals on 2026-10-27.", p.confirm_arrivals("2026-10-27")),
          setup=_ARRIVALS_1027),
    _conv("c03-faq-corrective", "concierge", "corrective", "no_tools", "2026-10-27T14:05:00",
          PromptSpec("What time is check-out?", p.answer("Check-out is at 11:00.")),
          PromptSpec("Is breakfast included?", p.answer("Yes, breakfast is served 7:00-10:30 and included.")))
    ,
    _conv("c04-faq-booking-blind", "concierge", "blind", "no_tools_then_booking", "2026-10-28T10:20:00",
          PromptSpec("Do you allow pets?", p.answer("Small pets are welcome for 15 EUR a night.")),
          PromptSpec("Then book a single from 2026-11-13 to 2026-11-15 for Carla Mendes.",
                     p.book("2026-11-13", "2026-11-15", "single", "Carla Mendes"))),
    _conv("c05-date-crash", "concierge", "crash", "crash_on_tool_error", "2026-10-29T16:45:00",
          PromptSpec("Book a suite checking in next friday to 2026-11-08 for Dmitri Volkov.",
                     p.book_natural_date("next friday", "2026-11-06", "2026-11-08", "suite", "Dmitri Volkov",
                                         blind_guesses=()))),
    _conv("b02-arrivals-blind", "back_office", "blind", "nightly_confirmations", "2026-10-30T23:30:00",
          PromptSpec("Nightly job: send confirmations for arrivals on 2026-10-31.", p.confirm_arrivals("2026-10-31")),
          setup=_ARRIVALS_1031),
    _conv("c06-booking-corrective", "concierge", "corrective", "plain_booking", "2026-10-31T12:00:00",
          PromptSpec("A suite from 2026-11-27 to 2026-11-29 for Eva Horvat, please.",
                     p.book("2026-11-27", "2026-11-29", "suite", "Eva Horvat"))),
    # ---- 2026-W45 ---------------------------------------------------------
    *_twins("concierge", ("room_type_from_hint",) * 2,
            ("c07-roomtype-corrective", "2026-11-02T09:30:00"), ("c08-roomtype-blind", "2026-11-02T13:10:00"),
            PromptSpec("I want a premium room from 2026-11-20 to 2026-11-22 for Elena Rossi.",
                       p.book_room_wording("premium", "suite", "2026-11-20", "2026-11-22", "Elena Rossi",
                                           blind_guesses=("deluxe", "suite")))),
    *_twins("concierge", ("conflict_switch_tools", "conflict_spin"),
            ("c09-conflict-corrective", "2026-11-03T10:00:00"), ("c10-conflict-blind", "2026-11-03T15:30:00"),
            PromptSpec("Book a double from 2026-11-27 to 2026-11-29 for Farid Haddad.",
                       p.book_lost_race("2026-11-27", "2026-11-29", "double", "Farid Haddad"),
                       events=_race("D-201", "2026-11-27", "2026-11-29"))),
    *_twins("back_office", ("deposit_retried_503",) * 2,
            ("b03-deposit-corrective", "2026-11-04T02:00:00"), ("b04-deposit-blind", "2026-11-05T02:00:00"),
            PromptSpec("Take the deposit for R-1001 and confirm it.", p.take_deposit("R-1001", 5000, confirm=True)),
            setup=_ONE_GUEST, gateway_failures=1),
    _conv("c11-compare-corrective", "concierge", "corrective", "parallel_calls", "2026-11-05T11:11:00",
          PromptSpec("What would a double or a suite cost from 2026-12-04 to 2026-12-06?",
                     p.compare_prices("2026-12-04", "2026-12-06", ("double", "suite")))),
    _conv("c12-roomtype-crash", "concierge", "crash", "crash_on_tool_error", "2026-11-06T17:20:00",
          PromptSpec("I want a premium room from 2026-12-11 to 2026-12-13 for Gus Moreno.",
                     p.book_room_wording("premium", "suite", "2026-12-11", "2026-12-13", "Gus Moreno",
                                         blind_guesses=()))),
    _conv("c13-booking-blind", "concierge", "blind", "plain_booking", "2026-11-07T10:00:00",
          PromptSpec("A double from 2026-11-21 to 2026-11-23 for Ines Duarte.",
                     p.book("2026-11-21", "2026-11-23", "double", "Ines Duarte")),
          PromptSpec("Thanks! Is there parking?", p.answer("Yes, underground parking is 20 EUR a day."))),
    # ---- 2026-W46 ---------------------------------------------------------
    _conv("c14-noname-corrective", "concierge", "corrective", "missing_name_asks_user", "2026-11-09T09:45:00",
          PromptSpec("Book a double room from 2026-12-18 to 2026-12-20.",
                     p.book_without_name("2026-12-18", "2026-12-20", "double", invented_name="Guest")),
          PromptSpec("It's for Dana Ruiz.", p.book_named("D-201", "2026-12-18", "2026-12-20", "Dana Ruiz"))),
    _conv("c15-noname-blind", "concierge", "blind", "missing_name_invented", "2026-11-09T14:30:00",
          PromptSpec("Book a double room from 2026-12-18 to 2026-12-20.",
                     p.book_without_name("2026-12-18", "2026-12-20", "double", invented_name="Guest"))),
    *_twins("concierge", ("sold_out_other_type", "sold_out_gave_up"),
            ("c16-soldout-corrective", "2026-11-10T10:30:00"), ("c17-soldout-blind", "2026-11-10T16:00:00"),
            PromptSpec("Is the suite free from 2026-12-31 to 2027-01-02?",
                       p.book_sold_out("2026-12-31", "2027-01-02", "suite", "double")),
            setup=_NEW_YEAR_SUITE),
    *_twins("back_office", ("deposit_transient_fail",) * 2,
            ("b05-deposit-corrective", "2026-11-11T02:00:00"), ("b06-deposit-blind", "2026-11-12T02:00:00"),
            PromptSpec("Take the deposit for R-1001.", p.take_deposit("R-1001", 5000, confirm=False)),
            setup=_ONE_GUEST, gateway_failures=3),
    _conv("b07-replay-corrective", "back_office", "corrective", "replay_after_restart", "2026-11-12T23:30:00",
          PromptSpec("Send confirmations for R-1001 and R-1002.", p.send_confirmations(("R-1001", "R-1002")),
                     fate="restart", last_step=0),
          setup=_TWO_GUESTS),
    _conv("c18-budget-corrective", "concierge", "corrective", "budget_exceeded", "2026-11-13T20:00:00",
          PromptSpec("List every weekend from December to June when the suite is free.",
                     p.survey_weekends(_FRIDAYS, "suite", per_step=5))),
    _conv("c19-compare-blind", "concierge", "blind", "parallel_calls", "2026-11-14T11:00:00",
          PromptSpec("What would a single or a double cost from 2026-12-11 to 2026-12-12?",
                     p.compare_prices("2026-12-11", "2026-12-12", ("single", "double")))),
    # ---- 2026-W47 ---------------------------------------------------------
    *_twins("concierge", ("checkout_before_checkin",) * 2,
            ("c20-reversed-corrective", "2026-11-16T09:00:00"), ("c21-reversed-blind", "2026-11-16T12:30:00"),
            PromptSpec("Book a single from 2026-12-20 to 2026-12-18 for Hugo Blanc.",
                       p.book_reversed_dates("2026-12-20", "2026-12-18", "single", "Hugo Blanc"))),
    *_twins("concierge", ("date_fixed_on_retry", "date_fixed_by_guessing"),
            ("c22-date2-corrective", "2026-11-17T10:10:00"), ("c23-date2-blind", "2026-11-17T15:40:00"),
            PromptSpec("A single from Dec 3rd to 2026-12-05 for Iris Kato.",
                       p.book_natural_date("Dec 3rd", "2026-12-03", "2026-12-05", "single", "Iris Kato",
                                           blind_guesses=("12/03/2026", "2026-12-03")))),
    _conv("b08-replay-reexecuted-corrective", "back_office", "corrective", "replay_reexecuted", "2026-11-18T02:00:00",
          PromptSpec("Take the deposit for R-1001.", p.take_deposit("R-1001", 5000, confirm=False),
                     fate="restart", last_step=0, idempotency_lost=True),
          setup=_ONE_GUEST),
    _conv("c24-died-corrective", "concierge", "corrective", "open_prompt_process_died", "2026-11-18T18:25:00",
          PromptSpec("Do you have a spa?", p.answer("Yes, the spa is open 8:00-21:00.")),
          PromptSpec("Book a premium room from 2026-12-24 to 2026-12-26 for Jun Ito.",
                     p.book_room_wording("premium", "suite", "2026-12-24", "2026-12-26", "Jun Ito", blind_guesses=()),
                     fate="died", last_step=0)),
    _conv("b09-arrivals-corrective", "back_office", "corrective", "nightly_confirmations", "2026-11-19T23:30:00",
          PromptSpec("Nightly job: send confirmations for arrivals on 2026-11-20.", p.confirm_arrivals("2026-11-20")),
          setup=_ARRIVALS_1120),
    _conv("c25-faq-blind", "concierge", "blind", "no_tools", "2026-11-20T10:00:00",
          PromptSpec("Can I check in early?", p.answer("Early check-in from 12:00 is free when the room is ready."))),
    _conv("c26-booking-corrective", "concierge", "corrective", "plain_booking", "2026-11-20T14:00:00",
          PromptSpec("A double from 2027-01-08 to 2027-01-10 for Kofi Mensah.",
                     p.book("2027-01-08", "2027-01-10", "double", "Kofi Mensah"))),
    _conv("b10-arrivals-blind", "back_office", "blind", "nightly_confirmations", "2026-11-20T23:30:00",
          PromptSpec("Nightly job: send confirmations for arrivals on 2026-11-21.", p.confirm_arrivals("2026-11-21")),
          setup=_ARRIVALS_1121),
)
