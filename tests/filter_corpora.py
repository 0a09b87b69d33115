"""Invented catalogues for the filter-extraction tests: movies, products, bicycles, used cars and (held out) papers.

Deterministic (a seeded ``random.Random``); people's names are invented by combining first and last names,
hundreds of them, so a name field is far past any small value cap.
"""

from __future__ import annotations

import random
from datetime import date, timedelta
from typing import Any

from waypost.filters.extract import FilterExtractor
from waypost.index.metadata import MetadataIndex

TODAY = date(2025, 6, 1)  # the extractor's clock in these tests
FIRST = (
    "Maren Tomasz Ines Kofi Anouk Rafael Sunniva Dmitri Leilani Oskar Priya Matteo Yara Bertil Chidi Elif "
    "Jonas Mireille Tariq Hedda Lucan Noor Soren Ximena"
).split()
LAST = (
    "Okafor Lindqvist Varga Brennan Castellano Haldane Ishikawa Morrow Petrakis Quintero Rasmussen Szabo "
    "Thorne Ulloa Vasquez Whitlock Yilmaz Zelenko Abernathy Bergstrom Calloway Dunmore Ekwueme Fairweather "
    "Gallardo Holmqvist Ivanova Jablonski"
).split()


def people(rng: random.Random, n: int) -> list[str]:
    names = sorted({f"{f} {last}" for f in FIRST for last in LAST})
    rng.shuffle(names)
    return names[:n]


def movies() -> list[dict[str, Any]]:
    rng = random.Random(26)
    directors = people(rng, 400)
    directors = [d for d in directors if not d.endswith(("Okafor", "Lindqvist"))][:398]
    directors += ["Maren Okafor", "Tomasz Lindqvist"]  # the only Okafor, the only Lindqvist
    genres = "Thriller Drama Comedy Horror Western Sci-Fi Animation War Documentary Romance Crime Action".split()
    out = []
    for i, director in enumerate(directors):
        out.append(
            {
                "year": 1950 + (i * 7) % 74,
                "imdb_rating": round(3.0 + (i * 37 % 63) / 10, 1),
                "meta_score": 20 + (i * 13) % 80,
                "runtime_minutes": 75 + (i * 11) % 136,
                "genres": sorted({genres[i % 12], genres[(i * 5 + 3) % 12]}),
                "director": director,
            }
        )
    return out


def products() -> list[dict[str, Any]]:
    brands = ["Northwind", "Kestrel", "Blue Harbor", "Altamira", "Quillon", "Sable & Finch"]
    categories = ["Headphones", "Laptops", "Backpacks", "Coffee Makers", "Running Shoes"]
    out = []
    for i in range(60):
        out.append(
            {
                "category": categories[i % 5],
                "brand": brands[(i * 7) % 6],
                "price_usd": round(15 + (i * 47) % 1900 + 0.99, 2),
                "weight_kg": round(0.15 + (i * 0.37) % 3.5, 2),
                "in_stock": i % 3 != 0,
                "released": (date(2019, 1, 10) + timedelta(days=i * 37)).isoformat(),
                "rating": round(1.0 + (i * 7 % 41) / 10, 1),
                "warranty_years": 1 + i % 5,
            }
        )
    return out


def papers() -> list[dict[str, Any]]:
    rng = random.Random(7)
    authors = people(rng, 300)
    authors = [a for a in authors if a not in ("Ines Varga", "Tomas Berg") and not a.endswith("Varga")]
    venues = ["Neural Computation Letters", "Journal of Applied Ecology", "Genome Research Notes", "Open Physics"]
    fields = ["Ecology", "Machine Learning", "Genomics", "Physics"]
    out = []
    for i in range(80):
        team = [authors[(i * 3 + k) % len(authors)] for k in range(1 + i % 3)]
        if i % 9 == 0:
            team.append("Ines Varga")
        if i % 12 == 0:
            team.append("Tomas Berg")
        out.append(
            {
                "published": (date(1998, 3, 1) + timedelta(days=i * 127)).isoformat(),
                "citations": (i * 53) % 900,
                "venue": venues[i % 4],
                "authors": team,
                "pages": 4 + i % 30,
                "open_access": i % 2 == 0,
                "field": fields[(i // 2) % 4],
            }
        )
    return out


def bicycles() -> list[dict[str, Any]]:
    """A bike shop: a hyphenated brand, model lines named "Series", codes with digits, yes/no and list fields."""
    brands = ["Velora", "Hart-Lindqvist", "Cobalt", "Strada Nova", "Pinecrest"]
    models = ["Trail 5", "Aero X2", "Urban Series", "T-Line", "Gravel Pro"]
    frames = ["Aluminium", "Carbon", "Steel", "Titanium"]
    drives = ["Chain", "Belt", "Hub Gear"]
    extras = ["Disc Brakes", "Rim Brakes", "Front Suspension", "Full Suspension", "Mudguards", "Kickstand", "Lights"]
    out = []
    for i in range(120):
        out.append(
            {
                "brand": brands[i % 5],
                "model": models[(i * 3) % 5],
                "frame": frames[(i * 7) % 4],
                "drive": drives[(i // 2) % 3],
                "electric": "yes" if i % 3 == 0 else "no",
                "price_usd": 350 + (i * 173) % 6200,
                "weight_kg": round(7.5 + (i * 0.61) % 18, 1),
                "gears": [1, 3, 7, 8, 11, 12, 24][i % 7],
                "extras": sorted({extras[i % 7], extras[(i * 5 + 2) % 7]}),
                "listed_on": (date(2024, 1, 5) + timedelta(days=(i * 11) % 500)).isoformat(),
            }
        )
    return out


def used_cars() -> list[dict[str, Any]]:
    """A used-car lot: every electric car is an automatic (a value that implies another), a list of features,
    makes of one and of two words, two dates (registered over 16 years, listed this year), prices and mileages
    of the same magnitudes."""
    rng = random.Random(11)
    makes = ["Kia", "Hyundai", "Skoda", "Mercedes-Benz", "Volvo"]
    fuels = ["Petrol", "Diesel", "Electric"]
    features = ["Heated seats", "Tow bar", "Sunroof", "Heat pump", "Parking sensors"]
    sellers = [*people(rng, 40), "Autohaus Brenner", "Nordlicht Cars"]
    out = []
    for i in range(150):
        fuel = fuels[i % 3]
        out.append(
            {
                "make": makes[i % 5],
                "fuel": fuel,
                "transmission": "Automatic" if fuel == "Electric" or i % 4 == 0 else "Manual",
                "body_type": ["SUV", "Estate", "Hatchback"][(i // 3) % 3],
                "color": ["White", "Black", "Grey"][(i // 2) % 3],
                "features": sorted({features[i % 5], features[(i * 3 + 1) % 5]}),
                "seller": sellers[i % len(sellers)],
                "country": ["Germany", "Austria", "Switzerland"][(i // 5) % 3],
                "price_eur": 3000 + (i * 397) % 42000,
                "mileage_km": 5000 + (i * 1733) % 190000,
                "first_registration": (date(2009, 3, 1) + timedelta(days=(i * 97) % 5800)).isoformat(),
                "listed_on": (date(2025, 1, 2) + timedelta(days=(i * 7) % 150)).isoformat(),
                "previous_owners": 1 + i % 4,
            }
        )
    return out


Expected = set[tuple[str, str, object]]


def found(extractor: FilterExtractor, query: str) -> Expected:
    """The extracted conditions as (field, op, value) triples; a list value as a sorted tuple."""

    def value(v: object) -> object:
        return tuple(sorted(v)) if isinstance(v, list) else v  # type: ignore[arg-type]

    return {(c.field, c.op.value, value(c.value)) for c in extractor.extract(query).conditions}


def extractor_of(rows: list[dict[str, Any]]) -> FilterExtractor:
    return FilterExtractor(MetadataIndex.build(rows), today=lambda: TODAY)
