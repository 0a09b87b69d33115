"""Seeded generators for three more held-out schemas: holiday stays, a laptop marketplace, a second-hand bookshop.

No waypost import here; rows are plain dicts (dates as ISO strings, lists as lists of strings). "Today" is pinned to
2025-06-01 and no date in the rows lies after it.

The rows must not change: they are the data the frozen cases in cases.py were written against.
"""

from __future__ import annotations

import itertools
import random
from datetime import date, timedelta
from typing import Any

TODAY = date(2025, 6, 1)


def _date(rng: random.Random, start: date, end: date) -> date:
    return start + timedelta(days=rng.randrange((end - start).days + 1))


def _names(rng: random.Random, first: list[str], last: list[str], k: int, forced: tuple[str, ...]) -> list[str]:
    pool = [f"{f} {s}" for f, s in itertools.product(first, last)]
    rng.shuffle(pool)
    pool = pool[:k]
    for name in forced:
        if name not in pool:
            pool.append(name)
    return pool


# --------------------------------------------------------------------------------------------------
# 1. Holiday stays (hotels, apartments, B&Bs, hostels ...) in European cities
STAY_CITIES = [  # name, weight, base price per night (EUR), coastal
    ("Lisbon", 10, 95, True),
    ("Porto", 6, 80, True),
    ("Barcelona", 9, 130, True),
    ("Madrid", 7, 115, False),
    ("Seville", 5, 100, False),
    ("Rome", 9, 140, False),
    ("Florence", 6, 150, False),
    ("Milan", 5, 135, False),
    ("Paris", 10, 180, False),
    ("Nice", 5, 150, True),
    ("Amsterdam", 8, 175, False),
    ("Prague", 7, 85, False),
    ("Vienna", 6, 120, False),
    ("Budapest", 6, 75, False),
    ("Kraków", 5, 65, False),
    ("Copenhagen", 5, 170, True),
    ("Edinburgh", 5, 145, False),
    ("Dublin", 5, 160, False),
    ("Athens", 6, 90, True),
    ("Dubrovnik", 4, 140, True),
]
PROPERTY_TYPES = [  # name, weight, price factor, guests range
    ("Hotel", 40, 1.0, (1, 4)),
    ("Apartment", 24, 0.95, (2, 6)),
    ("B&B", 9, 0.8, (2, 3)),
    ("Guesthouse", 9, 0.7, (1, 4)),
    ("Hostel", 9, 0.35, (1, 2)),
    ("Villa", 5, 2.3, (6, 12)),
    ("Aparthotel", 4, 1.05, (2, 5)),
]
BREAKFAST_P = {"Hotel": 0.55, "Apartment": 0.04, "B&B": 0.95, "Guesthouse": 0.5, "Hostel": 0.25, "Villa": 0.1}
BREAKFAST_P["Aparthotel"] = 0.3
STAY_AMENITIES = [  # name, probability for hotels/hostels/guesthouses, for apartments/villas
    ("Free WiFi", 0.93, 0.9),
    ("Air conditioning", 0.55, 0.5),
    ("Parking", 0.3, 0.35),
    ("Pool", 0.1, 0.2),
    ("Spa", 0.1, 0.0),
    ("Gym", 0.22, 0.03),
    ("Kitchen", 0.05, 0.95),
    ("Pets allowed", 0.22, 0.3),
    ("Airport shuttle", 0.12, 0.02),
    ("Restaurant", 0.45, 0.0),
    ("Bar", 0.4, 0.0),
    ("Balcony", 0.25, 0.45),
    ("Wheelchair accessible", 0.3, 0.15),
    ("EV charging", 0.07, 0.06),
    ("Family rooms", 0.3, 0.0),
    ("Washing machine", 0.03, 0.6),
]
HOST_FIRST = [
    "Marta", "João", "Inês", "Carlos", "Lucía", "Javier", "Giulia", "Matteo", "Chiara", "Élodie",
    "Antoine", "Sanne", "Pieter", "Jana", "Tomáš", "Katalin", "Bence", "Agata", "Michał", "Freja",
    "Mikkel", "Fiona", "Ciarán", "Eleni", "Nikos", "Ivana", "Luka", "Hannah", "Lukas", "Sofía",
]  # fmt: skip
HOST_LAST = [
    "Oliveira", "Ferreira", "Santos", "García", "Moreno", "Ruiz", "Bianchi", "Esposito", "Colombo", "Lefebvre",
    "Dupont", "Girard", "de Vries", "Jansen", "Bakker", "Novák", "Svoboda", "Horváth", "Nagy", "Szabó",
    "Nowak", "Kowalczyk", "Nielsen", "Jensen", "MacLeod", "Byrne", "Papadopoulos", "Georgiou", "Horvat", "Marić",
]  # fmt: skip
STAY_ADJ = ["Sunny", "Cosy", "Charming", "Modern", "Elegant", "Quiet", "Bright", "Stylish", "Historic", "Central"]


def stays(n: int = 360, seed: int = 44) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    forced = ("Marta Oliveira", "Lukas Nielsen", "Giulia Esposito", "Bence Nagy", "Ciarán Byrne", "Élodie Girard")
    hosts = _names(rng, HOST_FIRST, HOST_LAST, 190, forced)
    rows: list[dict[str, Any]] = []
    for i in range(n):
        city, _, base, coastal = rng.choices(STAY_CITIES, weights=[c[1] for c in STAY_CITIES])[0]
        ptype, _, factor, (glo, ghi) = rng.choices(PROPERTY_TYPES, weights=[p[1] for p in PROPERTY_TYPES])[0]
        price = round(base * factor * rng.lognormvariate(0, 0.3))
        price = max(18, price)
        guests = rng.randint(glo, ghi)
        if ptype in ("Apartment", "Villa", "Aparthotel"):
            price = round(price * (1 + 0.12 * max(0, guests - 2)))
        selfcatering = ptype in ("Apartment", "Villa")
        amen = [a for a, p_h, p_a in STAY_AMENITIES if rng.random() < (p_a if selfcatering else p_h)]
        if ptype == "Villa" and "Pool" not in amen and rng.random() < 0.7:
            amen.append("Pool")
        if ptype == "Hotel" and rng.random() < 0.15 and "Spa" not in amen:
            amen.append("Spa")
        if coastal and rng.random() < 0.3:
            amen.append("Sea view")
        if ptype == "Hostel":
            amen = [a for a in amen if a not in ("Spa", "Pool", "Family rooms")]
        if "Spa" in amen or "Pool" in amen:
            price = round(price * 1.2)
        rating = round(min(5.0, max(2.6, rng.gauss(4.3, 0.38))), 1)
        dist = round(min(14.0, max(0.1, rng.lognormvariate(0.25, 0.8))), 1)
        rows.append(
            {
                "listing_id": f"STY-{30000 + i * 3 + rng.randrange(3)}",
                "title": f"{rng.choice(STAY_ADJ)} {ptype.lower()} in {city}",
                "city": city,
                "property_type": ptype,
                "price_per_night_eur": price,
                "guest_rating": rating,
                "distance_to_center_km": dist,
                "max_guests": guests,
                "breakfast_included": "yes" if rng.random() < BREAKFAST_P[ptype] else "no",
                "free_cancellation": rng.random() < 0.64,
                "amenities": amen,
                "host_name": hosts[i] if i < len(hosts) else rng.choice(hosts),
                "last_renovated": _date(rng, date(2006, 3, 1), date(2025, 5, 20)).isoformat(),
            }
        )
    # hosts named in the cases run more than one place
    for name in forced:
        for r in rng.sample(rows, 2):
            r["host_name"] = name
    return rows


# --------------------------------------------------------------------------------------------------
# 2. Laptop marketplace (new, open-box, refurbished and used)
LAPTOP_MODELS = [
    # brand, model, screen_inches, weight_kg, base price USD, years, touch p, backlit p, ports, RAM options
    ("Apple", "MacBook Air 13", 13.6, 1.24, 1099, (2020, 2025), 0.0, 1.0,
     ["USB-C", "Thunderbolt 4", "MagSafe", "Headphone jack"], [8, 16, 24]),
    ("Apple", "MacBook Air 15", 15.3, 1.51, 1299, (2023, 2025), 0.0, 1.0,
     ["USB-C", "Thunderbolt 4", "MagSafe", "Headphone jack"], [8, 16, 24]),
    ("Apple", "MacBook Pro 14", 14.2, 1.6, 1999, (2021, 2025), 0.0, 1.0,
     ["USB-C", "Thunderbolt 4", "MagSafe", "HDMI", "SD card reader", "Headphone jack"], [16, 32, 64]),
    ("Apple", "MacBook Pro 16", 16.2, 2.15, 2499, (2019, 2025), 0.0, 1.0,
     ["USB-C", "Thunderbolt 4", "MagSafe", "HDMI", "SD card reader", "Headphone jack"], [16, 32, 64]),
    ("Dell", "XPS 13", 13.4, 1.19, 999, (2019, 2025), 0.35, 1.0, ["USB-C", "Thunderbolt 4"], [8, 16, 32]),
    ("Dell", "XPS 15", 15.6, 1.86, 1499, (2019, 2024), 0.3, 1.0,
     ["USB-C", "Thunderbolt 4", "SD card reader", "Headphone jack"], [16, 32, 64]),
    ("Dell", "Inspiron 15", 15.6, 1.65, 549, (2019, 2025), 0.15, 0.5,
     ["USB-C", "USB-A", "HDMI", "SD card reader", "Headphone jack"], [8, 16]),
    ("Dell", "Latitude 7440", 14.0, 1.36, 1199, (2023, 2025), 0.2, 1.0,
     ["USB-C", "Thunderbolt 4", "USB-A", "HDMI", "Headphone jack"], [16, 32]),
    ("Dell", "Alienware m16", 16.0, 3.25, 1899, (2023, 2025), 0.0, 1.0,
     ["USB-C", "Thunderbolt 4", "USB-A", "HDMI", "Ethernet", "Headphone jack"], [16, 32, 64]),
    ("Lenovo", "ThinkPad X1 Carbon", 14.0, 1.12, 1499, (2019, 2025), 0.25, 1.0,
     ["USB-C", "Thunderbolt 4", "USB-A", "HDMI", "Headphone jack"], [16, 32, 64]),
    ("Lenovo", "ThinkPad T14", 14.0, 1.37, 1049, (2019, 2025), 0.2, 0.9,
     ["USB-C", "Thunderbolt 4", "USB-A", "HDMI", "Ethernet", "Headphone jack"], [8, 16, 32]),
    ("Lenovo", "IdeaPad Slim 5", 14.0, 1.46, 649, (2021, 2025), 0.2, 0.7,
     ["USB-C", "USB-A", "HDMI", "SD card reader", "Headphone jack"], [8, 16]),
    ("Lenovo", "Yoga 7i", 14.0, 1.49, 849, (2020, 2025), 1.0, 1.0,
     ["USB-C", "Thunderbolt 4", "USB-A", "HDMI", "Headphone jack"], [8, 16]),
    ("Lenovo", "Legion 5", 15.6, 2.4, 1199, (2020, 2025), 0.0, 1.0,
     ["USB-C", "USB-A", "HDMI", "Ethernet", "Headphone jack"], [16, 32]),
    ("HP", "Spectre x360 14", 14.0, 1.44, 1449, (2020, 2025), 1.0, 1.0,
     ["USB-C", "Thunderbolt 4", "USB-A", "Headphone jack"], [16, 32]),
    ("HP", "EliteBook 840", 14.0, 1.36, 1199, (2019, 2025), 0.2, 1.0,
     ["USB-C", "Thunderbolt 4", "USB-A", "HDMI", "Headphone jack"], [8, 16, 32]),
    ("HP", "Pavilion 15", 15.6, 1.75, 599, (2019, 2025), 0.2, 0.5,
     ["USB-C", "USB-A", "HDMI", "SD card reader", "Headphone jack"], [8, 16]),
    ("HP", "Envy 16", 16.0, 2.3, 1199, (2022, 2025), 0.5, 1.0,
     ["USB-C", "Thunderbolt 4", "USB-A", "HDMI", "SD card reader", "Headphone jack"], [16, 32]),
    ("HP", "Omen 16", 16.1, 2.35, 1299, (2021, 2025), 0.0, 1.0,
     ["USB-C", "USB-A", "HDMI", "Ethernet", "Headphone jack"], [16, 32]),
    ("Asus", "Zenbook 14", 14.0, 1.2, 899, (2020, 2025), 0.3, 1.0,
     ["USB-C", "Thunderbolt 4", "USB-A", "HDMI", "Headphone jack"], [8, 16, 32]),
    ("Asus", "ROG Zephyrus G14", 14.0, 1.5, 1499, (2020, 2025), 0.0, 1.0,
     ["USB-C", "USB-A", "HDMI", "SD card reader", "Headphone jack"], [16, 32]),
    ("Asus", "Vivobook 15", 15.6, 1.7, 449, (2019, 2025), 0.1, 0.4,
     ["USB-C", "USB-A", "HDMI", "Headphone jack"], [8, 16]),
    ("Asus", "TUF Gaming A15", 15.6, 2.2, 899, (2020, 2025), 0.0, 1.0,
     ["USB-C", "USB-A", "HDMI", "Ethernet", "Headphone jack"], [16, 32]),
    ("Acer", "Swift Go 14", 14.0, 1.32, 749, (2022, 2025), 0.3, 1.0,
     ["USB-C", "Thunderbolt 4", "USB-A", "HDMI", "microSD reader", "Headphone jack"], [8, 16]),
    ("Acer", "Aspire 5", 15.6, 1.78, 499, (2019, 2025), 0.0, 0.5,
     ["USB-C", "USB-A", "HDMI", "Ethernet", "Headphone jack"], [8, 16]),
    ("Acer", "Nitro 5", 15.6, 2.5, 849, (2019, 2024), 0.0, 1.0,
     ["USB-C", "USB-A", "HDMI", "Ethernet", "Headphone jack"], [8, 16, 32]),
    ("Acer", "Nitro 17", 17.3, 2.9, 1099, (2023, 2025), 0.0, 1.0,
     ["USB-C", "USB-A", "HDMI", "Ethernet", "Headphone jack"], [16, 32]),
    ("Acer", "Chromebook Plus 514", 14.0, 1.45, 399, (2023, 2025), 0.4, 0.6,
     ["USB-C", "USB-A", "HDMI", "Headphone jack"], [8]),
    ("Microsoft", "Surface Laptop 5", 13.5, 1.27, 999, (2022, 2024), 1.0, 1.0,
     ["USB-C", "Thunderbolt 4", "USB-A", "Headphone jack"], [8, 16, 32]),
    ("Microsoft", "Surface Laptop Go 3", 12.4, 1.13, 799, (2023, 2025), 1.0, 0.0,
     ["USB-C", "USB-A", "Headphone jack"], [8, 16]),
    ("MSI", "Prestige 14", 14.0, 1.29, 999, (2020, 2025), 0.0, 1.0,
     ["USB-C", "Thunderbolt 4", "USB-A", "HDMI", "microSD reader", "Headphone jack"], [16, 32]),
    ("MSI", "Katana 15", 15.6, 2.25, 999, (2022, 2025), 0.0, 1.0,
     ["USB-C", "USB-A", "HDMI", "Ethernet", "Headphone jack"], [16, 32]),
    ("MSI", "Raider GE78", 17.0, 3.1, 2699, (2023, 2025), 0.0, 1.0,
     ["USB-C", "Thunderbolt 4", "USB-A", "HDMI", "Ethernet", "SD card reader", "Headphone jack"], [32, 64]),
    ("Samsung", "Galaxy Book4 Pro", 14.0, 1.23, 1449, (2024, 2025), 0.5, 1.0,
     ["USB-C", "Thunderbolt 4", "USB-A", "HDMI", "microSD reader", "Headphone jack"], [16, 32]),
    ("Samsung", "Galaxy Book3 360", 15.6, 1.46, 1099, (2023, 2024), 1.0, 1.0,
     ["USB-C", "USB-A", "HDMI", "microSD reader", "Headphone jack"], [8, 16]),
    ("Razer", "Blade 14", 14.0, 1.84, 2199, (2021, 2025), 0.0, 1.0, ["USB-C", "USB-A", "HDMI", "Headphone jack"],
     [16, 32]),
    ("Razer", "Blade 16", 16.0, 2.45, 2999, (2023, 2025), 0.0, 1.0,
     ["USB-C", "Thunderbolt 4", "USB-A", "HDMI", "SD card reader", "Headphone jack"], [32, 64]),
    ("Framework", "Laptop 13", 13.5, 1.3, 1049, (2021, 2025), 0.0, 1.0, ["USB-C", "USB-A", "HDMI", "Headphone jack"],
     [8, 16, 32, 64]),
    ("Framework", "Laptop 16", 16.0, 2.1, 1399, (2024, 2025), 0.0, 1.0,
     ["USB-C", "USB-A", "HDMI", "Ethernet", "Headphone jack"], [16, 32, 64]),
    ("LG", "gram 16", 16.0, 1.2, 1399, (2020, 2025), 0.3, 1.0,
     ["USB-C", "Thunderbolt 4", "USB-A", "HDMI", "microSD reader", "Headphone jack"], [16, 32]),
    ("LG", "gram 17", 17.0, 1.35, 1599, (2020, 2025), 0.0, 1.0,
     ["USB-C", "Thunderbolt 4", "USB-A", "HDMI", "microSD reader", "Headphone jack"], [16, 32]),
]  # fmt: skip
BRAND_WEIGHT = {"Apple": 14, "Dell": 13, "Lenovo": 14, "HP": 12, "Asus": 10, "Acer": 9, "Microsoft": 5, "MSI": 6}
BRAND_WEIGHT |= {"Samsung": 4, "Razer": 3, "Framework": 3, "LG": 4}
CONDITIONS = [("New", 38), ("Open box", 10), ("Refurbished", 32), ("Used", 20)]
SELLER_FIRST = [
    "Kevin", "Jasmine", "Marcus", "Priyanka", "Derek", "Tiffany", "Andre", "Lauren", "Hector", "Mei-Ling",
    "Brandon", "Ashley", "Tyrone", "Nicole", "Rafael", "Keisha", "Trevor", "Vanessa", "Omar", "Brianna",
    "Dmitri", "Carla", "Jamal", "Stephanie",
]  # fmt: skip
SELLER_LAST = [
    "Tran", "Nguyen", "Okoye", "Delgado", "Whitaker", "Castillo", "Brennan", "Kowalski", "Haldane", "Pruitt",
    "Abernathy", "Vasquez", "Oyelaran", "Lindgren", "Takahashi", "Mirza", "Callahan", "Petrakis", "Sorensen",
    "Ibarra",
]  # fmt: skip


def laptops(n: int = 300, seed: int = 55) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    forced = ("Kevin Tran", "Priyanka Mirza", "Hector Delgado", "Jasmine Okoye", "Trevor Whitaker")
    sellers = _names(rng, SELLER_FIRST, SELLER_LAST, 150, forced)
    by_brand: dict[str, list[tuple[Any, ...]]] = {}
    for m in LAPTOP_MODELS:
        by_brand.setdefault(m[0], []).append(m)
    brands = list(BRAND_WEIGHT)
    rows: list[dict[str, Any]] = []
    for i in range(n):
        brand = rng.choices(brands, weights=[BRAND_WEIGHT[b] for b in brands])[0]
        _, model, screen, wt, base, (y0, y1), p_touch, p_backlit, ports, rams = rng.choice(by_brand[brand])
        released = _date(rng, date(y0, 1, 15), min(date(y1, 11, 30), date(2025, 5, 20)))
        ram = rng.choice(rams)
        storage = rng.choices([256, 512, 1000, 2000], weights=[25, 42, 25, 8])[0]
        if ram >= 32 and storage == 256:
            storage = 512
        cond = rng.choices(CONDITIONS, weights=[w for _, w in CONDITIONS])[0][0]
        price = base * (1 + 0.12 * (rams.index(ram))) * {256: 0.94, 512: 1.0, 1000: 1.1, 2000: 1.28}[storage]
        age = (TODAY - released).days / 365.0
        price *= max(0.35, 1 - 0.13 * age)
        price *= {"New": 1.0, "Open box": 0.88, "Refurbished": 0.75, "Used": 0.62}[cond]
        price *= rng.uniform(0.92, 1.08)
        price_usd = max(149, round(price / 10) * 10 - 1)
        touch = rng.random() < p_touch
        weight = round(wt + (0.08 if touch and p_touch < 1 else 0.0) + rng.uniform(-0.03, 0.03), 2)
        rows.append(
            {
                "listing_id": f"LPT-{70000 + i * 5 + rng.randrange(5)}",
                "model": f"{brand} {model}",
                "brand": brand,
                "condition": cond,
                "price_usd": price_usd,
                "ram_gb": ram,
                "storage_gb": storage,
                "screen_inches": screen,
                "weight_kg": weight,
                "release_date": released.isoformat(),
                "touchscreen": touch,
                "backlit_keyboard": "yes" if rng.random() < p_backlit else "no",
                "ports": list(ports),
                "seller": sellers[i] if i < len(sellers) else rng.choice(sellers),
            }
        )
    for name in forced:
        for r in rng.sample(rows, 3):
            r["seller"] = name
    return rows


# --------------------------------------------------------------------------------------------------
# 3. Second-hand bookshop
GENRES = [  # name, weight, typical pages
    ("Literary Fiction", 16, 320),
    ("Crime", 11, 360),
    ("Thriller", 9, 380),
    ("Fantasy", 9, 480),
    ("Science Fiction", 8, 400),
    ("Romance", 7, 330),
    ("Horror", 5, 350),
    ("Historical Fiction", 7, 420),
    ("Biography", 6, 380),
    ("History", 6, 460),
    ("Poetry", 4, 110),
    ("Essays", 3, 240),
    ("Children's", 6, 150),
    ("Classics", 6, 420),
    ("Travel", 3, 280),
    ("Popular Science", 4, 300),
]
GENRE_PAIRS = {  # plausible second genres
    "Literary Fiction": ["Historical Fiction", "Classics", "Romance"],
    "Crime": ["Thriller", "Historical Fiction"],
    "Thriller": ["Crime", "Horror", "Science Fiction"],
    "Fantasy": ["Children's", "Romance", "Horror", "Science Fiction"],
    "Science Fiction": ["Fantasy", "Thriller", "Classics"],
    "Romance": ["Historical Fiction", "Fantasy", "Literary Fiction"],
    "Horror": ["Thriller", "Fantasy", "Classics"],
    "Historical Fiction": ["Romance", "Crime", "Literary Fiction"],
    "Biography": ["History", "Travel"],
    "History": ["Biography", "Travel", "Popular Science"],
    "Poetry": ["Classics", "Essays"],
    "Essays": ["Travel", "Popular Science", "History"],
    "Children's": ["Fantasy", "Classics", "Poetry"],
    "Classics": ["Literary Fiction", "Poetry", "Horror"],
    "Travel": ["Essays", "Biography", "History"],
    "Popular Science": ["History", "Essays"],
}
LANGUAGES = [("English", 70), ("French", 7), ("German", 6), ("Spanish", 5), ("Italian", 4), ("Japanese", 3)]
LANGUAGES += [("Dutch", 2), ("Portuguese", 2), ("Swedish", 1)]
EN_PUBLISHERS = {  # publisher -> genres it leans to (empty = general)
    "Penguin": [],
    "Vintage": ["Literary Fiction", "Classics", "Essays", "History"],
    "Faber & Faber": ["Literary Fiction", "Poetry", "Essays"],
    "Picador": ["Literary Fiction", "Essays", "Biography"],
    "Bloomsbury": ["Literary Fiction", "Fantasy", "Children's", "History"],
    "HarperCollins": [],
    "Hodder & Stoughton": ["Crime", "Thriller", "Romance", "Horror"],
    "Virago": ["Literary Fiction", "Classics", "Biography"],
    "Canongate": ["Literary Fiction", "Crime", "Essays"],
    "Granta": ["Literary Fiction", "Travel", "Essays"],
    "Fourth Estate": ["Literary Fiction", "Popular Science", "Biography"],
    "Orbit": ["Fantasy", "Science Fiction"],
    "Gollancz": ["Fantasy", "Science Fiction", "Horror"],
    "Tor": ["Fantasy", "Science Fiction", "Horror"],
    "Puffin": ["Children's"],
    "Oxford University Press": ["History", "Classics", "Popular Science", "Poetry"],
}
OTHER_PUBLISHERS = {
    "French": ["Gallimard", "Actes Sud"],
    "German": ["Suhrkamp", "Hanser"],
    "Spanish": ["Anagrama", "Alfaguara"],
    "Italian": ["Einaudi", "Feltrinelli"],
    "Japanese": ["Shinchosha", "Kodansha"],
    "Dutch": ["De Bezige Bij"],
    "Portuguese": ["Companhia das Letras"],
    "Swedish": ["Bonniers"],
}
AUTHOR_FIRST = {
    "English": [
        "Margaret", "Tobias", "Isolde", "Ewan", "Harriet", "Anselm", "Lydia", "Rupert", "Imogen", "Callum",
        "Beatrix", "Declan", "Philippa", "Jasper", "Rosalind", "Alasdair", "Octavia", "Niall", "Winifred", "Crispin",
        "Adaeze", "Tariq", "Ngozi", "Rohan", "Saoirse", "Desmond",
    ],
    "French": ["Amélie", "Bastien", "Solène", "Grégoire", "Margaux", "Thibault"],
    "German": ["Annegret", "Jörg", "Friederike", "Malte", "Ulrike"],
    "Spanish": ["Ximena", "Alejandro", "Itziar", "Gonzalo", "Remedios"],
    "Italian": ["Benedetta", "Ottavio", "Ludovica", "Raffaele"],
    "Japanese": ["Haruki", "Yoko", "Kaori", "Takeshi"],
    "Dutch": ["Maarten", "Femke", "Joost"],
    "Portuguese": ["Tiago", "Leonor", "Duarte"],
    "Swedish": ["Astrid", "Linnea", "Gustaf"],
}  # fmt: skip
AUTHOR_LAST = {
    "English": [
        "Ashworth", "Pemberton", "Okonkwo", "Fairbairn", "Kettering", "Lockridge", "Marchbanks", "Quennell",
        "Treharne", "Wainwright", "Adebayo", "Carrick", "Dunmore", "Halloran", "Iyengar", "Mayhew", "Ravenscroft",
        "Stone", "Thistlewood", "Vance", "Whitcombe", "Blackwood", "Ellery", "Fennimore",
    ],
    "French": ["Delacroix", "Marchetti", "Fontaine", "Rousselet", "Beaulieu"],
    "German": ["Kessler", "Brandauer", "Vogelsang", "Hollerbach"],
    "Spanish": ["Echeverría", "Salvatierra", "Olmedo", "Cifuentes"],
    "Italian": ["Castellani", "Benedetti", "Lombardo"],
    "Japanese": ["Okamura", "Fujisaki", "Hayashida"],
    "Dutch": ["van Dijk", "Hoekstra"],
    "Portuguese": ["Albuquerque", "Magalhães"],
    "Swedish": ["Lindqvist", "Bergström"],
}  # fmt: skip
TITLE_A = ["The", "The", "The Last", "The Long", "The Secret", "The Little", "Beyond the", "After the", "The Silent"]
TITLE_N = [
    "Salt House", "Orchard", "Lighthouse Keeper", "Cartographer", "Winter Garden", "Glass Harbour", "Ferryman",
    "Paper Moon", "River Road", "Clockmaker", "Amber Room", "Northern Line", "Quiet Island", "Bone Orchard",
    "Tin Crown", "Salt Marsh", "Summer Letters", "Night Train", "Copper Bell", "Fallow Year", "Lantern Festival",
    "Saltwater Bride", "Ash Wood", "Iron Sky", "Midnight Archive", "Cinder Queen", "Hollow Hills", "Stranger",
]  # fmt: skip


def books(n: int = 340, seed: int = 66) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    # authors: (name, language, career start year, career end year)
    authors: list[tuple[str, str, int, int]] = []
    seen: set[str] = set()
    for lang, _ in LANGUAGES:
        combos = [f"{f} {s}" for f, s in itertools.product(AUTHOR_FIRST[lang], AUTHOR_LAST[lang])]
        rng.shuffle(combos)
        k = 150 if lang == "English" else max(3, len(combos) // 2)
        for name in combos[:k]:
            if name in seen:
                continue
            seen.add(name)
            start = rng.choice([rng.randint(1950, 1985), rng.randint(1975, 2010), rng.randint(1995, 2022)])
            authors.append((name, lang, start, min(2025, start + rng.randint(3, 45))))
    rng.shuffle(authors)
    lang_w = dict(LANGUAGES)
    author_w = [lang_w[a[1]] / sum(1 for b in authors if b[1] == a[1]) for a in authors]
    rows: list[dict[str, Any]] = []
    for i in range(n):
        name, lang, y0, y1 = authors[i] if i < 200 else rng.choices(authors, weights=author_w)[0]
        g1, _, pages0 = rng.choices(GENRES, weights=[g[1] for g in GENRES])[0]
        genres = [g1]
        if rng.random() < 0.4:
            genres.append(rng.choice(GENRE_PAIRS[g1]))
        if "Classics" in genres:
            y0, y1 = min(y0, 1950), min(y1, 1985)
        published = _date(rng, date(y0, 1, 1), min(date(y1, 12, 31), date(2025, 5, 28)))
        if lang == "English":
            leaning = [p for p, gs in EN_PUBLISHERS.items() if any(g in gs for g in genres)]
            general = [p for p, gs in EN_PUBLISHERS.items() if not gs]
            publisher = rng.choice(leaning) if leaning and rng.random() < 0.75 else rng.choice(general)
        else:
            publisher = rng.choice(OTHER_PUBLISHERS[lang])
        pages = max(32, round(pages0 * rng.lognormvariate(0, 0.38)))
        if g1 in ("Fantasy", "History", "Classics") and rng.random() < 0.12:
            pages = rng.randint(900, 1350)
        hardcover = rng.random() < (0.6 if g1 in ("History", "Biography", "Children's") else 0.3)
        signed = rng.random() < 0.08
        price = rng.choice([2.5, 3.0, 3.5, 3.99, 4.5, 4.99, 5.99, 6.5, 7.0, 7.99, 8.5, 9.99, 12.0, 14.99])
        if hardcover:
            price += rng.choice([2.0, 3.0, 5.0, 6.5, 10.0])
        if signed:
            price = price * rng.choice([2, 3, 4, 6]) + rng.choice([0.0, 5.0, 10.0])
        if published.year < 1970 and rng.random() < 0.4:
            price += rng.choice([5.0, 10.0, 20.0])
        rows.append(
            {
                "book_id": f"BK-{40000 + i}",
                "title": f"{rng.choice(TITLE_A)} {rng.choice(TITLE_N)}",
                "author": name,
                "genres": genres,
                "language": lang,
                "publisher": publisher,
                "pages": pages,
                "price_gbp": round(price, 2),
                "published_date": published.isoformat(),
                "avg_rating": round(min(4.8, max(2.4, rng.gauss(3.9, 0.38))), 1),
                "signed_copy": signed,
                "hardcover": "yes" if hardcover else "no",
            }
        )
    return rows


SCHEMAS = {"stays": stays, "laptops": laptops, "books": books}
# which fields are dates (for scoring)
DATE_FIELDS = {"stays": {"last_renovated"}, "laptops": {"release_date"}, "books": {"published_date"}}
