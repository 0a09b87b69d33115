"""Seeded generators for three held-out schemas: Berlin rentals, tech events, recipe box.

No waypost import here; rows are plain dicts (dates as ISO strings, lists as lists of strings).

The rows must not change: they are the data the frozen cases in cases.py were written against. Only the layout
(ruff format), type hints and lint-only rewrites (``int(round(x))`` -> ``round(x)``, a renamed loop variable, an
unused ``enumerate``) differ from the original held-out file, and none of them changes a row or a draw of the RNG.
"""

from __future__ import annotations

import itertools
import random
from datetime import date, timedelta
from typing import Any

# --------------------------------------------------------------------------------------------------
# shared name pools (surnames chosen so they are not ordinary English words)
FIRST = [
    "Anna",
    "Markus",
    "Julia",
    "Thomas",
    "Sabine",
    "Stefan",
    "Katrin",
    "Jonas",
    "Lena",
    "Felix",
    "Miriam",
    "Tobias",
    "Claudia",
    "Andreas",
    "Nadine",
    "Florian",
    "Sophie",
    "Matthias",
    "Ines",
    "Ralf",
    "Leonie",
    "Dirk",
    "Hannah",
    "Oliver",
    "Petra",
    "Yusuf",
    "Aylin",
    "Mehmet",
    "Elif",
    "Piotr",
    "Agnieszka",
    "Luca",
    "Giulia",
    "Marta",
    "Tomasz",
    "Ingrid",
    "Lars",
    "Birgit",
    "Kerstin",
    "Henrik",
]
LAST = [
    "Schmidt",
    "Weber",
    "Müller",
    "Schneider",
    "Fischer",
    "Wagner",
    "Becker",
    "Hoffmann",
    "Schulz",
    "Koch",
    "Richter",
    "Klein",
    "Wolf",
    "Schröder",
    "Neumann",
    "Schwarz",
    "Zimmermann",
    "Braun",
    "Krüger",
    "Hofmann",
    "Hartmann",
    "Lange",
    "Werner",
    "Krause",
    "Lehmann",
    "Köhler",
    "Maier",
    "Kaiser",
    "Yilmaz",
    "Kowalski",
]

SPEAKER_FIRST = [
    "Priya",
    "Tom",
    "Laura",
    "Sofia",
    "Daniel",
    "Aisha",
    "Kenji",
    "Maria",
    "Lucas",
    "Emma",
    "Rahul",
    "Chloe",
    "Mateo",
    "Hana",
    "Oluwaseun",
    "Ingrid",
    "Diego",
    "Mei",
    "Samuel",
    "Fatima",
    "Noah",
    "Elena",
    "Arjun",
    "Zoe",
]
SPEAKER_LAST = [
    "Raman",
    "Becker",
    "Chen",
    "Martinez",
    "Okafor",
    "Tanaka",
    "Schultz",
    "Novak",
    "Haddad",
    "Gupta",
    "Dubois",
    "Rossi",
    "Kowalczyk",
    "Nakamura",
    "Fernandes",
    "Lindqvist",
    "Moreau",
    "Adeyemi",
    "Sato",
    "Kapoor",
]

AUTHOR_NAMES = [
    "Ottavia Bellini",
    "Claire Dubois",
    "Ravi Menon",
    "Hiroko Sato",
    "Maya Haddad",
    "Carmen Ortega",
    "Jin-woo Park",
    "Eleni Papadaki",
    "Nadia Benali",
    "Greta Lindholm",
    "Samira Khoury",
    "Pim Srisai",
    "Lucía Navarro",
    "Aditi Rao",
    "Kostas Andreou",
    "Yuki Morimoto",
    "Marco Santoro",
    "Emily Hartwell",
    "Sung-min Cho",
    "Amélie Laurent",
    "Rachid Amrani",
    "Tariq Nasser",
    "Isabella Conti",
    "Nok Chaiyaporn",
    "Diego Fuentes",
    "Anjali Iyer",
    "Hannah Whitlock",
    "Julien Marchand",
    "Leila Farouk",
    "Ji-hye Kang",
    "Sofia Galanis",
    "Camille Girard",
    "Vikram Desai",
    "Akira Honda",
    "Paola Ricci",
    "Omar Tazi",
    "Ava Thornbury",
    "Mateo Alvarez",
    "Siriporn Wong",
    "Nora Halvorsen",
]


def _date(rng: random.Random, start: date, end: date) -> date:
    return start + timedelta(days=rng.randrange((end - start).days + 1))


# --------------------------------------------------------------------------------------------------
# 1. Berlin rentals
DISTRICTS = [
    ("Mitte", 12, 21.0),
    ("Kreuzberg", 12, 18.5),
    ("Neukölln", 13, 15.5),
    ("Friedrichshain", 11, 18.0),
    ("Prenzlauer Berg", 10, 19.5),
    ("Charlottenburg", 9, 19.0),
    ("Schöneberg", 8, 17.5),
    ("Wedding", 8, 14.0),
    ("Moabit", 6, 15.0),
    ("Pankow", 6, 14.5),
    ("Lichtenberg", 6, 13.0),
    ("Steglitz", 5, 15.5),
    ("Treptow", 5, 14.5),
    ("Spandau", 4, 12.0),
]
AMENITIES = [
    ("Balcony", 0.55),
    ("Dishwasher", 0.45),
    ("Elevator", 0.4),
    ("Washing machine", 0.35),
    ("Garden", 0.12),
    ("Terrace", 0.1),
    ("Parking", 0.2),
    ("Cellar", 0.5),
    ("Fitted kitchen", 0.6),
    ("Bathtub", 0.45),
]
ADJ = ["Bright", "Cosy", "Renovated", "Quiet", "Spacious", "Modern", "Charming", "Sunny", "Central", "Lovely"]
KIND = ["flat", "apartment", "Altbau flat", "new-build apartment", "loft"]


def rentals(n: int = 380, seed: int = 11) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    names = [f"{f} {last}" for f, last in itertools.product(FIRST, LAST)]
    rng.shuffle(names)
    landlords = names[:330]
    for forced in ("Anna Schmidt", "Markus Weber"):
        if forced not in landlords:
            landlords[rng.randrange(len(landlords))] = forced
    rows: list[dict[str, Any]] = []
    for i in range(n):
        d, _, ppm = rng.choices(DISTRICTS, weights=[w for _, w, _ in DISTRICTS])[0]
        rooms = rng.choices([1, 2, 3, 4, 5], weights=[22, 36, 26, 11, 5])[0]
        lo, hi = {1: (22, 45), 2: (42, 72), 3: (62, 98), 4: (84, 128), 5: (105, 165)}[rooms]
        area = rng.randint(lo, hi)
        rent = round(area * ppm * rng.uniform(0.8, 1.25) / 10.0) * 10
        furnished = rng.random() < 0.28
        if furnished:
            rent = round(rent * 1.15 / 10.0) * 10
        day = rng.choice([1, 1, 1, 15, 15, rng.randint(1, 28)])
        month = rng.choices([5, 6, 7, 8, 9, 10], weights=[8, 20, 24, 20, 16, 12])[0]
        amen = [a for a, p in AMENITIES if rng.random() < p]
        rows.append(
            {
                "listing_id": f"BER-{10000 + i * 7 + rng.randrange(7)}",
                "title": f"{rng.choice(ADJ)} {rooms}-room {rng.choice(KIND)} in {d}",
                "district": d,
                "rent_eur": rent,
                "rooms": rooms,
                "area_m2": area,
                "floor": rng.choices(range(0, 8), weights=[14, 18, 18, 16, 13, 10, 6, 5])[0],
                "available_from": date(2025, month, day).isoformat(),
                "pets_allowed": "yes" if rng.random() < 0.38 else "no",
                "furnished": furnished,
                "amenities": amen,
                "energy_class": rng.choices("ABCDEFG", weights=[6, 14, 22, 24, 16, 11, 7])[0],
                "landlord": landlords[i] if i < len(landlords) else rng.choice(landlords),
            }
        )
    return rows


# --------------------------------------------------------------------------------------------------
# 2. Tech conferences / events
CITIES = [
    ("Berlin", "Germany", 10),
    ("Munich", "Germany", 5),
    ("Lisbon", "Portugal", 7),
    ("Porto", "Portugal", 3),
    ("Paris", "France", 7),
    ("Amsterdam", "Netherlands", 7),
    ("London", "United Kingdom", 10),
    ("Barcelona", "Spain", 6),
    ("Madrid", "Spain", 5),
    ("New York", "United States", 9),
    ("San Francisco", "United States", 9),
    ("Austin", "United States", 5),
    ("Toronto", "Canada", 5),
    ("Vancouver", "Canada", 3),
    ("Tokyo", "Japan", 5),
    ("Bangalore", "India", 5),
    ("Sydney", "Australia", 4),
    ("Dublin", "Ireland", 4),
    ("Stockholm", "Sweden", 3),
    ("Warsaw", "Poland", 3),
]
TOPICS = [
    ("AI", 14),
    ("Machine Learning", 10),
    ("Cloud", 10),
    ("Security", 9),
    ("DevOps", 8),
    ("Data Engineering", 7),
    ("Web Development", 8),
    ("Mobile", 5),
    ("UX Design", 5),
    ("Blockchain", 4),
    ("Robotics", 3),
    ("Fintech", 5),
    ("Healthtech", 4),
    ("Open Source", 6),
]
EVENT_KIND = ["Summit", "Conference", "Days", "Forum", "Meetup", "Expo", "Camp", "Connect"]


def events(n: int = 260, seed: int = 22) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    speakers_pool = [f"{f} {last}" for f, last in itertools.product(SPEAKER_FIRST, SPEAKER_LAST)]
    rng.shuffle(speakers_pool)
    speakers_pool = speakers_pool[:180]
    for forced in ("Priya Raman", "Tom Becker", "Laura Chen", "Sofia Martinez"):
        if forced not in speakers_pool:
            speakers_pool.append(forced)
    rows: list[dict[str, Any]] = []
    for i in range(n):
        city, country, _ = rng.choices(CITIES, weights=[w for *_, w in CITIES])[0]
        k = rng.choices([1, 2, 3], weights=[45, 40, 15])[0]
        topics: list[str] = []
        while len(topics) < k:
            t = rng.choices(TOPICS, weights=[w for _, w in TOPICS])[0][0]
            if t not in topics:
                topics.append(t)
        fmt = rng.choices(["In-person", "Online", "Hybrid"], weights=[55, 20, 25])[0]
        kind = rng.choice(EVENT_KIND)
        if kind == "Meetup":
            cap = rng.randint(30, 250)
        else:
            cap = round(rng.lognormvariate(6.9, 1.2) / 10.0) * 10
            cap = max(80, min(cap, 20000))
        if rng.random() < 0.16 or kind == "Meetup":
            price = 0
        else:
            price = max(29, round(rng.lognormvariate(5.6, 0.8) / 10.0) * 10 - 1)
            price = min(price, 2499)
        start = _date(rng, date(2025, 1, 10), date(2026, 6, 30))
        year = start.year
        title = f"{topics[0]} {kind} {city if fmt != 'Online' else 'Online'} {year}"
        rows.append(
            {
                "event_id": f"EV-{5000 + i}",
                "title": title,
                "city": city,
                "country": country,
                "start_date": start.isoformat(),
                "ticket_price_usd": price,
                "capacity": cap,
                "format": fmt,
                "topics": topics,
                "speakers": rng.sample(speakers_pool, rng.randint(2, 5)),
            }
        )
    # make sure the named speakers appear
    for name in ("Priya Raman", "Tom Becker", "Laura Chen", "Sofia Martinez"):
        for r in rng.sample(rows, 3):
            if name not in r["speakers"]:
                r["speakers"].append(name)
    return rows


# --------------------------------------------------------------------------------------------------
# 3. Recipe box
CUISINES = [
    ("Italian", 14),
    ("Mexican", 9),
    ("Thai", 8),
    ("Indian", 10),
    ("Japanese", 7),
    ("French", 7),
    ("Greek", 6),
    ("Moroccan", 5),
    ("Korean", 6),
    ("American", 8),
    ("Lebanese", 5),
]
COURSES = [("Breakfast", 10), ("Main", 38), ("Dessert", 12), ("Soup", 9), ("Salad", 10), ("Snack", 8), ("Side", 8)]
DIETS = [
    ("Vegetarian", 0.38),
    ("Vegan", 0.18),
    ("Gluten-free", 0.25),
    ("Dairy-free", 0.22),
    ("Low-carb", 0.12),
    ("Nut-free", 0.3),
]
INGREDIENTS = [
    "Chicken",
    "Tofu",
    "Salmon",
    "Chickpeas",
    "Mushrooms",
    "Beef",
    "Pasta",
    "Rice",
    "Eggs",
    "Lentils",
    "Shrimp",
    "Spinach",
    "Potatoes",
    "Pork",
    "Aubergine",
    "Coconut milk",
]
MEAT = {"Chicken", "Salmon", "Beef", "Shrimp", "Pork"}
DISH = ["curry", "bowl", "stew", "bake", "skillet", "traybake", "salad", "soup", "wraps", "fritters", "noodles"]


def recipes(n: int = 320, seed: int = 33) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    rows: list[dict[str, Any]] = []
    for i in range(n):
        cuisine = rng.choices(CUISINES, weights=[w for _, w in CUISINES])[0][0]
        course = rng.choices(COURSES, weights=[w for _, w in COURSES])[0][0]
        ing = rng.sample(INGREDIENTS, rng.choices([1, 2, 3], weights=[30, 50, 20])[0])
        diet = [d for d, p in DIETS if rng.random() < p]
        if any(x in MEAT for x in ing):
            diet = [d for d in diet if d not in ("Vegetarian", "Vegan")]
        if "Vegan" in diet:
            if "Vegetarian" not in diet:
                diet.insert(0, "Vegetarian")
            ing = [x for x in ing if x != "Eggs"] or ["Lentils"]
            if "Dairy-free" not in diet:
                diet.append("Dairy-free")
        base_time = {"Breakfast": 15, "Main": 40, "Dessert": 45, "Soup": 35, "Salad": 15, "Snack": 15, "Side": 25}[
            course
        ]
        prep = max(5, round(rng.lognormvariate(0, 0.45) * base_time / 5.0) * 5)
        base_kcal = {
            "Breakfast": 380,
            "Main": 620,
            "Dessert": 420,
            "Soup": 300,
            "Salad": 320,
            "Snack": 220,
            "Side": 260,
        }[course]
        kcal = max(60, round(rng.gauss(base_kcal, base_kcal * 0.25) / 10.0) * 10)
        protein = max(1, round(rng.gauss(28 if any(x in MEAT for x in ing) else 14, 7)))
        first = ing[0].lower()
        rows.append(
            {
                "recipe_id": f"RCP-{2000 + i}",
                "title": f"{cuisine} {first} {rng.choice(DISH)}",
                "cuisine": cuisine,
                "course": course,
                "prep_time_min": prep,
                "calories": kcal,
                "servings": rng.choices([1, 2, 4, 6, 8], weights=[6, 30, 42, 16, 6])[0],
                "protein_g": protein,
                "difficulty": rng.choices(["Easy", "Medium", "Hard"], weights=[50, 36, 14])[0],
                "diet": diet,
                "main_ingredients": ing,
                "author": rng.choice(AUTHOR_NAMES),
                "rating": round(min(5.0, max(2.5, rng.gauss(4.1, 0.45))), 1),
                "published": _date(rng, date(2018, 3, 1), date(2025, 5, 28)).isoformat(),
            }
        )
    return rows


SCHEMAS = {"rentals": rentals, "events": events, "recipes": recipes}
# which fields are dates (for scoring)
DATE_FIELDS = {"rentals": {"available_from"}, "events": {"start_date"}, "recipes": {"published"}}
