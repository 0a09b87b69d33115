"""Held-out queries with the filters a careful human would extract. today = 2025-06-01.

Written before either extractor was run. Notation:
  C(field, op, value)            one expected condition (a "slot")
  ANY([conds...], [conds...])    a slot that any one of these alternatives satisfies
  X(slot, bad=...)               the slot is an exclusion; `bad` = the value(s) whose *positive* filter would be harmful
  opt=[...]                      conditions that are acceptable but not required (neither a hit nor a spurious filter)
  expect=[] and kind="none"      not a catalogue query: nothing should be extracted

Frozen: do not change a query or an expectation. Only the layout (ruff format) and the helpers' type hints differ
from the original held-out file (sha256 59cb18fb506c7076e1fc3aa3d08512e69f7519e59c56e4bb8c5d1cc50bc9fdf4);
bench_filter_schemas.py checks a digest of CASES as Python objects before it scores anything.
"""

from __future__ import annotations

from typing import Any

Slot = tuple[Any, ...]
Case = dict[str, Any]


def C(field: str, op: str, value: Any) -> Slot:
    return ("C", field, op, value)


def ANY(*alts: Slot | list[Slot]) -> Slot:
    return ("ANY", [a if isinstance(a, list) else [a] for a in alts])


def X(slot: Slot, bad: Any) -> Slot:
    return ("X", slot, bad if isinstance(bad, list) else [bad])


def Q(q: str, *expect: Slot, opt: tuple[Slot, ...] | list[Slot] = (), kind: str = "cat") -> Case:
    return {"q": q, "expect": list(expect), "opt": list(opt), "kind": kind}


def NONE(q: str) -> Case:
    return {"q": q, "expect": [], "opt": [], "kind": "none"}


RENTALS = [
    Q("2-room flats in Kreuzberg", C("rooms", "eq", 2), C("district", "eq", "Kreuzberg")),
    Q("apartments in Neukölln under 1.2k", C("district", "eq", "Neukölln"), C("rent_eur", "lt", 1200)),
    Q(
        "furnished place in Mitte for €900 or less",
        C("furnished", "eq", True),
        C("district", "eq", "Mitte"),
        C("rent_eur", "lte", 900),
    ),
    Q("3+ rooms, 1 500 euros max", C("rooms", "gte", 3), C("rent_eur", "lte", 1500)),
    Q("flats with a balcony and a dishwasher", C("amenities", "eq", "Balcony"), C("amenities", "eq", "Dishwasher")),
    Q(
        "anything not in Mitte with an elevator",
        X(C("district", "ne", "Mitte"), "Mitte"),
        C("amenities", "eq", "Elevator"),
    ),
    Q("pet-friendly flats in Friedrichshain", C("pets_allowed", "eq", "yes"), C("district", "eq", "Friedrichshain")),
    Q(
        "flats in Wedding where pets are not allowed",
        X(C("pets_allowed", "eq", "no"), "yes"),
        C("district", "eq", "Wedding"),
    ),
    Q(
        "non-furnished 3 room apartment in Pankow",
        X(C("furnished", "eq", False), True),
        C("rooms", "eq", 3),
        C("district", "eq", "Pankow"),
    ),
    Q("at least 60 square metres in Charlottenburg", C("area_m2", "gte", 60), C("district", "eq", "Charlottenburg")),
    Q("over 70 m2 with a garden", C("area_m2", "gt", 70), C("amenities", "eq", "Garden")),
    Q("studio under 40 sqm", C("area_m2", "lt", 40), opt=[C("rooms", "eq", 1)]),
    Q("flats that become available in August 2025", C("available_from", "eq", "2025-08")),
    Q("available before 15 July", C("available_from", "lt", "2025-07-15")),
    Q("listings available after 1 September 2025", C("available_from", "gt", "2025-09-01")),
    Q(
        "flats available from next month in Wedding",
        C("district", "eq", "Wedding"),
        opt=[C("available_from", "gte", "2025-07-01"), C("available_from", "eq", "2025-07")],
    ),
    Q("ground floor flats in Schöneberg", C("floor", "eq", 0), C("district", "eq", "Schöneberg")),
    Q("apartments above the 3rd floor", C("floor", "gt", 3)),
    Q("Moabit or Wedding, max 1000 EUR", C("district", "in", ["Moabit", "Wedding"]), C("rent_eur", "lte", 1000)),
    Q("listings from landlord Anna Schmidt", C("landlord", "eq", "Anna Schmidt")),
    Q("flats by Markus Weber in Pankow", C("landlord", "eq", "Markus Weber"), C("district", "eq", "Pankow")),
    Q("energy class A or B", C("energy_class", "in", ["A", "B"])),
    Q("apartments without a bathtub", X(C("amenities", "ne", "Bathtub"), "Bathtub")),
    Q("between 50 and 80 m²", C("area_m2", "gte", 50), C("area_m2", "lte", 80)),
    Q("rent between 700 and 1,100 euros", C("rent_eur", "gte", 700), C("rent_eur", "lte", 1100)),
    Q("4 or more rooms, pets allowed", C("rooms", "gte", 4), C("pets_allowed", "eq", "yes")),
    Q("fewer than three rooms in Spandau", C("rooms", "lt", 3), C("district", "eq", "Spandau")),
    Q("anything but Neukölln or Wedding", X(C("district", "nin", ["Neukölln", "Wedding"]), ["Neukölln", "Wedding"])),
    Q("furnished flats available before August", C("furnished", "eq", True), C("available_from", "lt", "2025-08-01")),
    Q(
        "under €1,000 in Treptow with elevator",
        C("rent_eur", "lt", 1000),
        C("district", "eq", "Treptow"),
        C("amenities", "eq", "Elevator"),
    ),
    Q(
        "Prenzlauer Berg, not on the ground floor",
        C("district", "eq", "Prenzlauer Berg"),
        X(ANY(C("floor", "ne", 0), C("floor", "gt", 0)), 0),
    ),
    NONE("how much deposit is usual in Berlin?"),
    NONE("what documents do I need for a Schufa check?"),
    NONE("thanks, that's all for now"),
    NONE("can you explain what Kaltmiete means?"),
    NONE("is it legal to raise the rent by 15% within 3 years?"),
    NONE("how do I contact customer support"),
    NONE("write a short message to a landlord asking for a viewing"),
    NONE("what's the difference between a Wohnung and a WG?"),
]

EVENTS = [
    Q("AI conferences in Berlin", C("topics", "eq", "AI"), C("city", "eq", "Berlin")),
    Q(
        "security events in Germany under $300",
        C("topics", "eq", "Security"),
        C("country", "eq", "Germany"),
        C("ticket_price_usd", "lt", 300),
    ),
    Q(
        "free online events about DevOps",
        C("ticket_price_usd", "eq", 0),
        C("format", "eq", "Online"),
        C("topics", "eq", "DevOps"),
    ),
    Q(
        "hybrid conferences in Spain or Portugal",
        C("format", "eq", "Hybrid"),
        C("country", "in", ["Spain", "Portugal"]),
    ),
    Q(
        "events starting in the next 30 days",
        C("start_date", "gte", "2025-06-01"),
        ANY(C("start_date", "lte", "2025-07-01"), C("start_date", "lt", "2025-07-01")),
    ),
    Q("conferences in July 2025", C("start_date", "eq", "2025-07")),
    Q("in-person events with capacity over 5,000", C("format", "eq", "In-person"), C("capacity", "gt", 5000)),
    Q("small meetups for fewer than 200 people", C("capacity", "lt", 200)),
    Q("talks by Priya Raman", C("speakers", "eq", "Priya Raman")),
    Q("events where Tom Becker or Laura Chen speak", C("speakers", "in", ["Tom Becker", "Laura Chen"])),
    Q(
        "machine learning events in the US that aren't online",
        C("topics", "eq", "Machine Learning"),
        C("country", "eq", "United States"),
        X(C("format", "ne", "Online"), "Online"),
    ),
    Q("tickets $150 or less in London", C("ticket_price_usd", "lte", 150), C("city", "eq", "London")),
    Q("under 1k USD, cloud or DevOps", C("ticket_price_usd", "lt", 1000), C("topics", "in", ["Cloud", "DevOps"])),
    Q("events in Tokyo this year", C("city", "eq", "Tokyo"), C("start_date", "eq", "2025")),
    Q("conferences after October 2025", C("start_date", "gt", "2025-10")),
    Q("anything before March 2026 in Amsterdam", C("start_date", "lt", "2026-03"), C("city", "eq", "Amsterdam")),
    Q(
        "past events in Paris",
        C("city", "eq", "Paris"),
        ANY(C("start_date", "lt", "2025-06-01"), C("start_date", "lte", "2025-06-01")),
    ),
    Q(
        "upcoming UX Design events",
        C("topics", "eq", "UX Design"),
        ANY(C("start_date", "gte", "2025-06-01"), C("start_date", "gt", "2025-06-01")),
    ),
    Q(
        "hybrid or online events about Healthtech",
        C("format", "in", ["Hybrid", "Online"]),
        C("topics", "eq", "Healthtech"),
    ),
    Q("tickets between 200 and 500 dollars", C("ticket_price_usd", "gte", 200), C("ticket_price_usd", "lte", 500)),
    Q("capacity of at least ten thousand", C("capacity", "gte", 10000)),
    Q(
        "events in Barcelona, excluding blockchain",
        C("city", "eq", "Barcelona"),
        X(C("topics", "ne", "Blockchain"), "Blockchain"),
    ),
    Q("Open Source conferences in Canada", C("topics", "eq", "Open Source"), C("country", "eq", "Canada")),
    Q(
        "web development events in Madrid that are not hybrid",
        C("topics", "eq", "Web Development"),
        C("city", "eq", "Madrid"),
        X(C("format", "ne", "Hybrid"), "Hybrid"),
    ),
    Q(
        "events starting between 1 September and 30 November 2025",
        C("start_date", "gte", "2025-09-01"),
        C("start_date", "lte", "2025-11-30"),
    ),
    Q("Fintech summits with at least 500 seats", C("topics", "eq", "Fintech"), C("capacity", "gte", 500)),
    Q("Robotics events in Munich", C("topics", "eq", "Robotics"), C("city", "eq", "Munich")),
    Q(
        "Data Engineering, $99 max, in person",
        C("topics", "eq", "Data Engineering"),
        C("ticket_price_usd", "lte", 99),
        C("format", "eq", "In-person"),
    ),
    Q(
        "events in 2026 with Sofia Martinez speaking",
        C("speakers", "eq", "Sofia Martinez"),
        C("start_date", "eq", "2026"),
    ),
    Q(
        "mobile dev conferences in India or Australia, not in-person",
        C("topics", "eq", "Mobile"),
        C("country", "in", ["India", "Australia"]),
        X(C("format", "ne", "In-person"), "In-person"),
    ),
    NONE("how do I get a refund for my ticket?"),
    NONE("what time zone is the livestream in?"),
    NONE("can I transfer my registration to a colleague?"),
    NONE("tell me a joke"),
    NONE("what does keynote mean"),
    NONE("I bought 3 tickets but only got 2 confirmation emails"),
    NONE("who runs this website?"),
    NONE("how early should I arrive at a conference?"),
]

RECIPES = [
    Q(
        "vegetarian Indian dinners",
        C("diet", "eq", "Vegetarian"),
        C("cuisine", "eq", "Indian"),
        opt=[C("course", "eq", "Main")],
    ),
    Q("quick pasta under 20 minutes", C("main_ingredients", "eq", "Pasta"), C("prep_time_min", "lt", 20)),
    Q("recipes ready in half an hour or less", C("prep_time_min", "lte", 30)),
    Q("vegan, under 500 calories", C("diet", "eq", "Vegan"), C("calories", "lt", 500)),
    Q("at least 30 g protein", C("protein_g", "gte", 30)),
    Q("Thai soups", C("cuisine", "eq", "Thai"), C("course", "eq", "Soup")),
    Q("gluten-free desserts", C("diet", "eq", "Gluten-free"), C("course", "eq", "Dessert")),
    Q("dishes that serve 6", C("servings", "eq", 6)),
    Q("recipes for at least four people", C("servings", "gte", 4)),
    Q(
        "chicken recipes but not Mexican",
        C("main_ingredients", "eq", "Chicken"),
        X(C("cuisine", "ne", "Mexican"), "Mexican"),
    ),
    Q("easy Italian recipes", C("difficulty", "eq", "Easy"), C("cuisine", "eq", "Italian")),
    Q(
        "salmon dishes that aren't hard to make",
        C("main_ingredients", "eq", "Salmon"),
        X(C("difficulty", "ne", "Hard"), "Hard"),
    ),
    Q("recipes by Ottavia Bellini", C("author", "eq", "Ottavia Bellini")),
    Q("rated 4.5 or higher", C("rating", "gte", 4.5)),
    Q("Japanese recipes rated above 4 stars", C("cuisine", "eq", "Japanese"), C("rating", "gt", 4)),
    Q("Greek or Lebanese salads", C("cuisine", "in", ["Greek", "Lebanese"]), C("course", "eq", "Salad")),
    Q(
        "vegan mains without tofu",
        C("diet", "eq", "Vegan"),
        C("course", "eq", "Main"),
        X(C("main_ingredients", "ne", "Tofu"), "Tofu"),
    ),
    Q("nut-free snacks", C("diet", "eq", "Nut-free"), C("course", "eq", "Snack")),
    Q("between 300 and 600 kcal", C("calories", "gte", 300), C("calories", "lte", 600)),
    Q("Korean dishes that take more than 1 hour", C("cuisine", "eq", "Korean"), C("prep_time_min", "gt", 60)),
    Q(
        "less than 45 mins, lentils or chickpeas",
        C("prep_time_min", "lt", 45),
        C("main_ingredients", "in", ["Lentils", "Chickpeas"]),
    ),
    Q("recipes published in 2024", C("published", "eq", "2024")),
    Q(
        "recipes added in the last 6 months",
        ANY(C("published", "gte", "2024-12-01"), C("published", "gt", "2024-12-01")),
    ),
    Q(
        "low-carb breakfast under 400 calories",
        C("diet", "eq", "Low-carb"),
        C("course", "eq", "Breakfast"),
        C("calories", "lt", 400),
    ),
    Q(
        "dairy-free French recipes not by Claire Dubois",
        C("diet", "eq", "Dairy-free"),
        C("cuisine", "eq", "French"),
        X(C("author", "ne", "Claire Dubois"), "Claire Dubois"),
    ),
    Q(
        "Moroccan sides with under 10 g of protein",
        C("cuisine", "eq", "Moroccan"),
        C("course", "eq", "Side"),
        C("protein_g", "lt", 10),
    ),
    Q("medium difficulty shrimp recipes", C("difficulty", "eq", "Medium"), C("main_ingredients", "eq", "Shrimp")),
    Q("eggs, 2 servings", C("main_ingredients", "eq", "Eggs"), C("servings", "eq", 2)),
    Q("beef recipes with at most 700 kcal per serving", C("main_ingredients", "eq", "Beef"), C("calories", "lte", 700)),
    Q(
        "American or Mexican food, no beef",
        C("cuisine", "in", ["American", "Mexican"]),
        X(C("main_ingredients", "ne", "Beef"), "Beef"),
    ),
    NONE("how do I convert cups to grams?"),
    NONE("what's a good substitute for buttermilk?"),
    NONE("how long should I rest a steak?"),
    NONE("thanks!"),
    NONE("what's 350 F in Celsius?"),
    NONE("how do I save a recipe to my favourites"),
    NONE("why didn't my bread rise"),
    NONE("can you recommend a wine to go with dinner"),
]

CASES: dict[str, list[Case]] = {"rentals": RENTALS, "events": EVENTS, "recipes": RECIPES}
