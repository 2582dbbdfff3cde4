#!/usr/bin/env python3
r"""Generate conf/workloads/customer_service.jsonl, the traffic of a bank's customer-service
RAG chat assistant ("Northbank"), replayed by `flywheel bench ablation` through the
OpenAI-compatible server.

Each output line is one request:
    {"class": "short"|"long"|"generation",
     "messages": [{"role": "system", ...}, {"role": "user", ...}],
     "max_tokens": 64|128|384}

  short       ~90%  one to three sentence account/card/transfer questions (~15-60 tokens),
                    built combinatorially from templates and slot pools.
  long        ~9%   complaint tickets with RAG context (~1,300-1,700 tokens each): ticket
                    header, customer profile, transaction log, complaint, agent notes and
                    policy excerpts. Every ticket is distinct from its first characters on
                    (unique ticket id, customer, dates, amounts), so no prefix cache can reuse
                    one ticket for another beyond the shared system message.
  generation  ~1%   requests for long answers (guides, letters) with short prompts.

Lines are in replay order (the bench draws them in file order and assigns arrival times
itself): the classes are shuffled together with a fixed seed and no two long lines are
adjacent. The output depends only on --seed and --lines (stdlib only, no clock, nothing that
depends on hash order), so rerunning reproduces the committed file byte for byte.

Token counts were checked with `flywheel tokenize` and models/SmolLM2-135M-Instruct.Q4_1.gguf
(a BPE vocabulary that, like Llama 2's, splits numbers into single digits). The tickets' logs,
ids and amounts are digit-dense, so 1,300-1,700 tokens is only about 3,700-5,100 characters.

Regenerate:
    python3 tools/bench/make_customer_service_workload.py > conf/workloads/customer_service.jsonl
or  python3 tools/bench/make_customer_service_workload.py \
        --out conf/workloads/customer_service.jsonl
"""
import argparse
import datetime
import json
import math
import random
import re
import string
import sys

SEED = 20250611
TOTAL_LINES = 700
SHARE_LONG = 0.09
SHARE_GENERATION = 0.01
MAX_TOKENS = {"short": 64, "long": 128, "generation": 384}
SYSTEM = ("You are Northbank's customer-service assistant. Answer briefly and accurately "
          "from the account context given.")

# Long tickets: token budget drawn per ticket, measured by estimate_tokens(). A ticket grows
# until it reaches its budget and may overshoot by one added paragraph, note, policy or log row,
# so the finished tickets land at about 1,300-1,700 tokens.
LONG_TOKENS_MIN = 1310
LONG_TOKENS_MAX = 1610
TOKEN_CALIBRATION = 1.057  # estimate_tokens() scale, fitted to the SmolLM2 tokenizer
SHORT_TOKENS_MIN = 16  # by estimate_tokens(); keeps every short at 15+ real tokens

# ---------------------------------------------------------------------------------------------
# Slot pools shared by short questions and tickets
# ---------------------------------------------------------------------------------------------

FIRST_NAMES = [
    "Maria", "James", "Aisha", "Robert", "Priya", "Daniel", "Elena", "Marcus", "Sofia", "Kevin",
    "Grace", "Tomasz", "Yuki", "Olivia", "Ahmed", "Hannah", "Luis", "Chloe", "Darnell", "Ingrid",
    "Wei", "Fatima", "Patrick", "Nadia", "Samuel", "Rebecca", "Diego", "Amara", "Victor", "Laura",
    "Kwame", "Isabel", "Gregory", "Mei", "Oscar", "Teresa", "Rahul", "Brianna", "Nikolai", "Joan",
]
LAST_NAMES = [
    "Alvarez", "Bennett", "Chen", "Dubois", "Okafor", "Fischer", "Gupta", "Hernandez", "Ivanova",
    "Johansson", "Kowalski", "Lindqvist", "Martinez", "Nakamura", "O'Brien", "Patel", "Quinn",
    "Rossi", "Schneider", "Thompson", "Umar", "Vasquez", "Whitaker", "Xu", "Yilmaz", "Zimmerman",
    "Abernathy", "Brooks", "Castillo", "Donovan", "Ellison", "Farouk", "Gallagher", "Hoffman",
    "Ibarra", "Jensen", "Keller", "Lopez", "Mbeki", "Novak",
]
CITIES = [
    ("Austin", "TX"), ("Denver", "CO"), ("Columbus", "OH"), ("Portland", "OR"), ("Tampa", "FL"),
    ("Raleigh", "NC"), ("Madison", "WI"), ("Phoenix", "AZ"), ("Sacramento", "CA"),
    ("Minneapolis", "MN"), ("Nashville", "TN"), ("Richmond", "VA"), ("Boise", "ID"),
    ("Albany", "NY"), ("Omaha", "NE"), ("Pittsburgh", "PA"), ("Salt Lake City", "UT"),
    ("Charleston", "SC"), ("Kansas City", "MO"), ("Hartford", "CT"),
]
COUNTRIES = ["Mexico", "Canada", "the UK", "France", "Japan", "Italy", "Spain", "Germany",
             "Portugal", "Thailand", "Brazil", "Ireland", "Greece", "South Korea", "Costa Rica"]
FOREIGN_MERCHANTS = [
    ("CARREFOUR CITY PARIS", "France", "EUR"), ("TESCO EXPRESS LONDON", "the UK", "GBP"),
    ("FAMILYMART SHINJUKU TOKYO", "Japan", "JPY"), ("EL CORTE INGLES MADRID", "Spain", "EUR"),
    ("OXXO CANCUN", "Mexico", "MXN"), ("PINGO DOCE LISBOA", "Portugal", "EUR"),
    ("ESSELUNGA MILANO", "Italy", "EUR"), ("REWE BERLIN", "Germany", "EUR"),
    ("7-ELEVEN BANGKOK", "Thailand", "THB"), ("DUNNES STORES DUBLIN", "Ireland", "EUR"),
]
MERCHANTS = [
    "Amazon Marketplace", "Whole Foods Market", "Shell", "Uber", "Netflix", "Delta Air Lines",
    "Marriott", "Target", "Costco", "Home Depot", "Starbucks", "Apple", "Spotify",
    "CVS Pharmacy", "Walgreens", "Best Buy", "Lyft", "Chipotle", "Trader Joe's", "Airbnb",
    "Expedia", "Hilton", "Kroger", "Safeway", "DoorDash", "PayPal", "Comcast", "Verizon",
    "Geico", "Walmart", "IKEA", "Lowe's", "United Airlines", "Southwest Airlines", "Etsy",
    "eBay", "Hulu", "Instacart", "Peloton", "Ticketmaster",
]
# (statement descriptor, kind) rows for filler transactions in ticket logs
LOG_MERCHANTS = [
    ("WHOLE FOODS MKT #{n}", "POS"), ("SHELL OIL {n}", "POS"), ("UBER *TRIP", "CARD"),
    ("NETFLIX.COM", "RECUR"), ("TARGET T-{n}", "POS"), ("COSTCO WHSE #{n}", "POS"),
    ("STARBUCKS STORE {n}", "POS"), ("AMZN MKTP US*{c}", "CARD"), ("SPOTIFY USA", "RECUR"),
    ("CVS/PHARMACY #{n}", "POS"), ("KROGER #{n}", "POS"), ("DOORDASH*{c}", "CARD"),
    ("COMCAST XFINITY", "ACH"), ("VERIZON WIRELESS", "ACH"), ("GEICO AUTO", "ACH"),
    ("CHIPOTLE {n}", "POS"), ("TRADER JOE'S #{n}", "POS"), ("HOME DEPOT #{n}", "POS"),
    ("APPLE.COM/BILL", "RECUR"), ("LYFT *RIDE", "CARD"), ("WALGREENS #{n}", "POS"),
    ("INSTACART", "CARD"), ("SAFEWAY #{n}", "POS"), ("PLANET FITNESS", "RECUR"),
    ("CITY WATER UTIL", "ACH"), ("STATE FARM INS", "ACH"), ("ATM WITHDRAWAL {n}", "ATM"),
    ("ZELLE TO {p}", "XFER"), ("VENMO PAYMENT", "ACH"), ("HULU", "RECUR"),
]
EMPLOYERS = ["Brightline Logistics", "Cedar Health Partners", "Summit Software LLC",
             "Harbor County Schools", "Redwood Manufacturing", "Apex Retail Group",
             "Meridian Engineering", "Lakeside Medical Center", "Orion Analytics",
             "Granite State University"]
CARDS = ["Platinum Rewards Visa", "Cash Back Mastercard", "debit card", "Travel Elite Visa",
         "secured credit card", "business Visa", "Student Mastercard", "Premier debit card"]
ACCOUNTS = ["checking account", "savings account", "joint checking account",
            "High-Yield Savings account", "money market account", "student checking account",
            "business checking account", "Premier Checking account"]
LOANS = ["auto loan", "personal loan", "mortgage", "home equity line of credit",
         "student loan refinance", "boat loan"]
DEVICES = ["iPhone", "Android phone", "new laptop", "work computer", "iPad", "Pixel phone"]
RELATIONS = ["my daughter", "my son", "my landlord", "a contractor", "my sister",
             "a friend", "my roommate", "my father", "my tenant", "a wedding vendor"]
BILLERS = ["Comcast", "Verizon", "Geico", "State Farm", "Duke Energy", "AT&T",
           "City Water", "Progressive", "Spectrum", "T-Mobile"]
FAMILY = ["my daughter", "my son", "my wife", "my husband", "my partner", "my mother",
          "my sister"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

CHECKING_PRODUCTS = ["Everyday Checking", "Premier Checking", "Student Checking",
                     "Joint Checking"]
PRODUCT_CARDS = ["Platinum Rewards Visa", "Cash Back Mastercard", "Travel Elite Visa",
                 "Debit Mastercard", "Secured Visa"]
SEGMENTS = ["Retail", "Retail Plus", "Premier", "Private Client", "Small Business"]
CHANNELS = ["secure chat", "phone", "email", "branch visit", "mobile app message",
            "social media escalation", "letter"]
AGENT_NAMES = ["A. Moreno", "B. Carter", "C. Nguyen", "D. Walsh", "E. Adeyemi", "F. Larsen",
               "G. Petrov", "H. Singh", "I. Romero", "J. Takahashi", "K. Osei", "L. Brennan"]


def money(x):
    return ("-" if x < 0 else "") + "${:,.2f}".format(abs(x))


def month_day(rng):
    return "{} {}".format(rng.choice(MONTHS), rng.randint(1, 28))


# ---------------------------------------------------------------------------------------------
# Short questions
# ---------------------------------------------------------------------------------------------

def _slot_values(rng):
    """Draw one value for every slot a short template may name."""
    city, state = rng.choice(CITIES)
    amount = rng.choice([rng.uniform(4, 120), rng.uniform(20, 900), rng.uniform(100, 1500)])
    return {
        "amount": money(amount),
        "amount2": money(rng.uniform(5, 600)),
        "big_amount": "${:,}".format(rng.randrange(1500, 80000, 50)),
        "round_amount": "${:,}".format(rng.choice([200, 300, 500, 750, 1000, 1500, 2000,
                                                   2500, 3000, 5000, 10000])),
        "card": rng.choice(CARDS),
        "account": rng.choice(ACCOUNTS),
        "account2": rng.choice(ACCOUNTS),
        "merchant": rng.choice(MERCHANTS),
        "city": city,
        "state": state,
        "country": rng.choice(COUNTRIES),
        "date": month_day(rng),
        "weekday": rng.choice(WEEKDAYS),
        "last4": "{:04d}".format(rng.randrange(10000)),
        "days": str(rng.randint(2, 14)),
        "n": str(rng.randint(2, 5)),
        "dom": rng.choice(["1st", "5th", "10th", "15th", "20th", "25th", "28th"]),
        "employer": rng.choice(EMPLOYERS),
        "person": rng.choice(FIRST_NAMES),
        "relation": rng.choice(RELATIONS),
        "family": rng.choice(FAMILY),
        "fee": rng.choice(["$35.00", "$12.00", "$15.00", "$25.00", "$10.00", "$3.50", "$39.00"]),
        "fx_fee": money(rng.uniform(0.5, 45)),
        "limit": "${:,}".format(rng.choice([3000, 5000, 7500, 10000, 12000, 15000, 20000])),
        "biller": rng.choice(BILLERS),
        "cust_years": str(rng.randint(2, 25)),
        "loan": rng.choice(LOANS),
        "device": rng.choice(DEVICES),
        "cd_rate": "{:.2f}%".format(rng.choice([3.5, 3.85, 4.1, 4.25, 4.5, 4.75, 5.0])),
        "loan_rate": "{:.2f}%".format(rng.choice([5.25, 6.125, 6.49, 6.875, 7.2, 7.75, 8.9,
                                                   11.5])),
        "term": rng.choice(["6-month", "12-month", "18-month", "24-month", "5-year"]),
        "years": str(rng.choice([15, 20, 30])),
    }


SHORT_TEMPLATES = [
    # balances, statements, accounts
    "What is the current balance on my {account} ending in {last4}?",
    "Why is my available balance lower than my current balance on my {account}?",
    "Can I get a copy of my {account} statement from {date}? I need it for a rental application.",
    "How do I download the last {n} statements for my {account} as PDFs?",
    "When does my {account} statement cycle close each month?",
    "How do I open a {account} online, and is there a minimum opening deposit?",
    "Can I add {family} as a joint owner on my {account}?",
    "How do I close my {account}? I want the remaining balance moved to my {account2}.",
    "What is the monthly maintenance fee on a {account}, and how can I get it waived?",
    "Is there a minimum balance I need to keep in my {account} to avoid fees?",
    "What interest rate does the {account} pay right now?",
    "Is the {cd_rate} rate on a {term} CD fixed for the whole term?",
    "What happens if I withdraw early from my {term} CD?",
    "Can you confirm my {account} is FDIC insured and up to what amount?",
    # cards
    "I lost my {card} in {city} today. How do I freeze it and order a replacement?",
    "My {card} ending in {last4} was stolen. Can you cancel it and send a new one?",
    "How long does a replacement {card} take to arrive, and can I expedite it?",
    "My {card} was declined at {merchant} for {amount} even though I have funds. Why?",
    "How do I change the PIN on my {card}?",
    "I forgot my {card} PIN. Can I reset it in the app or do I need to visit a branch?",
    "How do I activate the new {card} that arrived in the mail?",
    "Can I raise the credit limit on my {card} to {limit}?",
    "What is the daily ATM withdrawal limit on my {card}?",
    "What is the daily purchase limit on my {card}, and can I raise it for one day?",
    "Does my {card} charge a foreign transaction fee when I shop in {country}?",
    "Can I add my {card} to Apple Pay or Google Pay on my {device}?",
    "How do I lock my {card} temporarily? I think I left it at {merchant}.",
    "What is the APR on my {card}, and when does the promotional rate end?",
    "How do I redeem the rewards points on my {card} for a statement credit?",
    "When is the payment due date for my {card}, and can I change it to the {dom}?",
    # travel
    "I'm travelling to {country} from {date} for {days} days. Do I need to set a travel notice "
    "on my {card}?",
    "How do I add a travel notice for {country} in the mobile app?",
    "My {card} keeps getting declined in {country}. I set a travel notice. What should I do?",
    "Can I withdraw cash at ATMs in {country} with my {card}, and what will it cost?",
    # transfers, wires, Zelle
    "How do I send a wire transfer of {big_amount} to an account in {country}?",
    "What is the fee for an outgoing domestic wire, and what is the cutoff time?",
    "I sent a wire of {big_amount} on {date} and it hasn't arrived. How can I trace it?",
    "What information do I need to receive an international wire into my {account}?",
    "What is your routing number for wires and is it different from the ACH routing number?",
    "I sent {amount} by Zelle to {relation} but they say they never got it. What now?",
    "I sent {amount} by Zelle to the wrong person. Can you reverse it?",
    "What is my daily Zelle limit, and can I send {round_amount} today?",
    "How long does an external transfer from my {account} to another bank take?",
    "Can I schedule a recurring transfer of {amount} from my {account} to my {account2} every "
    "{weekday}?",
    "Why is my transfer of {amount} to my {account2} still pending after {days} days?",
    # deposits
    "When will my direct deposit from {employer} show up in my {account}?",
    "How do I set up direct deposit? My employer {employer} wants a form.",
    "My paycheck from {employer} didn't arrive today. Is there a delay on your side?",
    "I deposited a check for {amount} through the app on {date}. Why is part of it on hold?",
    "What is the mobile check deposit limit per day and per month?",
    "Can I deposit a check made out to {family} and me into my {account}?",
    "Why was my mobile deposit of {amount} rejected?",
    # fees, overdraft
    "I was charged a {fee} overdraft fee on {date}. Can you refund it?",
    "Why was I charged an overdraft fee when a deposit was pending?",
    "How does overdraft protection work, and can I link my {account2} to cover it?",
    "Can I opt out of overdraft coverage on debit card purchases?",
    "What is this {fee} service charge on my {account} statement?",
    "I was charged a foreign transaction fee of {fx_fee} on a purchase in {country}. Why?",
    "Why did I get a returned item fee on {date}?",
    # disputes, fraud
    "I see a charge of {amount} from {merchant} on {date} that I didn't make. How do I dispute it?",
    "I was charged twice by {merchant} for {amount}. Can you fix it?",
    "{merchant} promised a refund of {amount} {days} days ago and it still hasn't posted. "
    "What can I do?",
    "How long does a card dispute take, and will I get a provisional credit?",
    "What is the status of my dispute for the {amount} charge from {merchant}?",
    "I got a text saying my {card} was used in {city}. Was that really from Northbank?",
    "Someone called claiming to be from Northbank and asked for my PIN. What should I do?",
    "There's a pending charge of {amount} from {merchant} that I cancelled. Will it drop off?",
    "An ATM in {city} took my money but didn't give me cash. The withdrawal was {amount}.",
    # loans, mortgages
    "What is the current rate for a {years}-year fixed mortgage?",
    "Can I make an extra principal payment of {amount} on my {loan}?",
    "Why did my mortgage payment go up by {amount2} this month?",
    "How do I request a payoff quote for my {loan}?",
    "When is my {loan} payment due, and is there a grace period?",
    "Can I skip a payment on my {loan} this month? I had an unexpected bill.",
    "How do I get my escrow analysis for my mortgage?",
    "What documents do I need to apply for a {loan} of {big_amount}?",
    "Can I refinance my {loan}? My current rate is {loan_rate}.",
    "Where can I find the 1098 mortgage interest statement for last year?",
    "Does paying off my {loan} early carry a prepayment penalty?",
    # online banking
    "I'm locked out of online banking after too many password attempts. How do I get back in?",
    "How do I set up two-factor authentication on my {device}?",
    "The mobile app keeps crashing on my {device} when I open transfers. Any fix?",
    "How do I change the phone number on my account? I switched carriers.",
    "How do I update my mailing address? I moved to {city}, {state}.",
    "How do I set up a low balance alert for my {account} at {amount}?",
    "How do I add a payee in Bill Pay for my {biller} bill?",
    "A Bill Pay payment of {amount} to {biller} shows as sent but they didn't receive it.",
    "Can I stop a check I wrote for {amount} on {date}?",
    "How do I order new checks for my {account}?",
    "Can I see my credit score in the Northbank app?",
    "Is the branch in {city} open on {weekday}, and do I need an appointment?",
]

SHORT_LEADS = ["", "", "", "", "", "Hi. ", "Hello. ", "Quick question. ", "Good morning. ",
               "Hi there! ", "Hey. ", "Sorry to bother you. "]
SHORT_TAILS = [
    "", "", "", "", "", "", "Thanks!", "Thank you.", "This is urgent.",
    "I'm travelling next week so I need this sorted soon.",
    "I tried the app but couldn't find it.",
    "I've been a customer for {cust_years} years.",
    "Please let me know what you need from me.",
    "I already called once and nobody got back to me.",
    "The branch in {city} told me to ask here.",
    "My rent is due in {days} days so timing matters.",
]


def fill(template, values):
    """str.format a template with the slot values it names (other slots are ignored)."""
    names = [f for _, f, _, _ in string.Formatter().parse(template) if f]
    return template.format(**{k: values[k] for k in names})


def make_short(rng):
    values = _slot_values(rng)
    lead = rng.choice(SHORT_LEADS)
    body = fill(rng.choice(SHORT_TEMPLATES), values)
    tail = fill(rng.choice(SHORT_TAILS), values)
    text = lead + body + ((" " + tail) if tail else "")
    while estimate_tokens(text) < SHORT_TOKENS_MIN:  # pad the shortest questions with context
        text += " " + fill(rng.choice([t for t in SHORT_TAILS if t]), values)
    return text


# ---------------------------------------------------------------------------------------------
# Generation requests
# ---------------------------------------------------------------------------------------------

GENERATION_TEMPLATES = [
    "Write a detailed step-by-step guide for a customer who has just had their {card} stolen "
    "while travelling in {country}: what to do in the first hour, the first day and the first "
    "week, including disputes and replacement cards.",
    "Draft a full letter to a customer named {person} explaining why their {loan} payment "
    "increased after the annual escrow analysis, what the shortage was, and their options to "
    "pay it as a lump sum or spread it over twelve months.",
    "Write a detailed step-by-step guide to setting up online banking, two-factor "
    "authentication, bill pay and balance alerts for a customer who has never banked online.",
    "Draft a complete customer-facing FAQ of at least ten questions and answers about "
    "overdraft fees, overdraft protection, and how to avoid being charged.",
    "Write a detailed explanation, with examples, of how a {term} CD, a High-Yield Savings "
    "account and a money market account differ, for a customer deciding where to put "
    "{big_amount}.",
    "Draft a full apology letter to {person}, whose international wire of {big_amount} to "
    "{country} was delayed by nine days, explaining what went wrong, the fee refund, and the "
    "steps we have taken.",
    "Write a detailed step-by-step guide to disputing a card charge with a merchant and with "
    "the bank, covering timelines, provisional credit, documents to keep, and what happens "
    "if the merchant responds.",
    "Draft a thorough checklist and explanation for a first-time home buyer applying for a "
    "{years}-year fixed mortgage: documents, credit, down payment, closing costs and timeline.",
]


def make_generations(rng, count):
    templates = list(GENERATION_TEMPLATES)
    rng.shuffle(templates)
    out = []
    for i in range(count):
        out.append(fill(templates[i % len(templates)], _slot_values(rng)))
    return out


# ---------------------------------------------------------------------------------------------
# Long complaint tickets
# ---------------------------------------------------------------------------------------------

POLICIES = {
    "REG-E": ("Electronic Fund Transfer Error Resolution (Reg E)",
              "A customer may report an error on an electronic fund transfer, including debit "
              "card, ATM and ACH transactions, within 60 days of the statement on which it first "
              "appeared. We must acknowledge the claim, investigate, and resolve it within 10 "
              "business days, or within 45 days if we issue a provisional credit for the disputed "
              "amount within 10 business days. Foreign-initiated, point-of-sale debit and new "
              "account transactions may take up to 90 days. The customer must be told the result "
              "in writing within 3 business days of completing the investigation."),
    "REG-Z": ("Credit Card Billing Error Resolution (Reg Z)",
              "Billing errors on credit card accounts must be reported in writing within 60 days "
              "of the statement date. We acknowledge within 30 days and resolve within two "
              "complete billing cycles, and no later than 90 days. While the dispute is open the "
              "customer is not required to pay the disputed amount or related finance charges, "
              "and we may not report the amount as delinquent."),
    "LIAB": ("Zero Liability for Unauthorized Card Use",
             "Cardholders are not responsible for unauthorized purchases made with their "
             "Northbank card or card number, provided they reported the loss or theft promptly "
             "and took reasonable care to protect the card and PIN. The card must be blocked "
             "immediately, a replacement issued with a new number, and any recurring billers "
             "notified by the customer."),
    "OD-FEE": ("Overdraft and Returned Item Fees",
               "An overdraft fee of $35 applies to each item paid into overdraft, up to three "
               "fees per business day. No fee is charged when the account is overdrawn by $50 or "
               "less at the end of the day, or for items of $5 or less. Transactions post in the "
               "order: deposits, then wires and debit card purchases by time, then checks and "
               "ACH debits by amount. Customers enrolled in Overdraft Protection are charged a "
               "$10 transfer fee instead."),
    "GOODWILL": ("Goodwill Fee Refunds",
                 "Agents may refund up to $105 in fees per customer in a rolling 12-month period "
                 "without supervisor approval when the customer has had no more than one prior "
                 "goodwill refund in that period. Refunds above $105, or a second refund within "
                 "12 months, need approval from a team lead and must be recorded with the reason "
                 "code GW-2 on the customer profile."),
    "HOLDS": ("Funds Availability and Deposit Holds",
              "The first $225 of a check deposit is available the next business day. The rest is "
              "normally available on the second business day. An exception hold of up to seven "
              "business days may be placed on deposits over $5,525, redeposited checks, or "
              "accounts repeatedly overdrawn; the customer must receive a hold notice stating the "
              "reason and the date funds become available."),
    "WIRE": ("Outgoing Wire Transfers and Tracing",
             "Domestic wires cost $30 and international wires $45; wires submitted before 4:00 "
             "p.m. ET on a business day are sent the same day. International wires may pass "
             "through one or more intermediary banks that can deduct fees. If a beneficiary has "
             "not received funds after 5 business days, the agent opens a trace (SWIFT gpi "
             "inquiry) and gives the customer the UETR. Fees are refunded when a delay is caused "
             "by a Northbank error."),
    "ATM": ("ATM Cash Dispense Errors",
            "When an ATM debits an account but does not dispense cash, the agent files an ATM "
            "claim. Northbank-owned machines are balanced within 2 business days and the amount is "
            "credited if the machine shows an overage. For network ATMs the claim is sent to the "
            "ATM owner and resolved under Reg E timelines, with provisional credit by day 10."),
    "DD": ("Direct Deposit and ACH Credits",
           "ACH credits are posted on the settlement date the originator sends. Northbank posts "
           "payroll files received by 6:00 a.m. ET the same morning and may make them available "
           "up to two days early when the file arrives early. Northbank cannot post a deposit "
           "the employer has not sent; agents should check the ACH receipt log before advising "
           "the customer to contact their employer."),
    "TRAVEL": ("Travel Notices and Fraud Declines",
               "Travel notices reduce, but do not remove, fraud declines abroad. Transactions that "
               "match high-risk patterns can still be declined and trigger a text alert. "
               "Foreign transaction fees are 3% on standard cards and waived on the Travel Elite "
               "Visa and Premier debit card. Fees charged on transactions that were declined and "
               "then retried may be refunded as goodwill."),
    "ESCROW": ("Mortgage Escrow Analysis",
               "Escrow accounts are analysed once a year. If taxes or insurance rose, the account "
               "may show a shortage, which the customer can pay in one lump sum or spread over "
               "12 monthly payments. A cushion of up to two months of escrow payments is permitted "
               "under RESPA. Customers may request a new analysis when a tax bill is corrected or "
               "an insurance policy changes."),
    "AUTOPAY": ("Card AutoPay and Late Fees",
                "If an AutoPay payment is returned or not initiated because of a Northbank system "
                "error, the late fee and interest charged for that cycle are reversed and the "
                "late payment is not reported to the credit bureaus. If AutoPay fails because "
                "the funding account was closed or had insufficient funds, the first late fee in "
                "12 months may be waived as goodwill."),
    "MERCHANT": ("Merchant Disputes: Goods and Services",
                 "For goods not received or credits not processed, the customer should first "
                 "try to resolve the matter with the merchant. A dispute may be filed 15 days "
                 "after the expected delivery or refund date. The customer should provide the "
                 "order confirmation, the merchant's promise of a refund and any tracking or "
                 "return receipts. Chargeback rights end 120 days after the transaction."),
    "HOLD-REVIEW": ("Account Restrictions and Reviews",
                    "An account may be restricted while the bank verifies identity or reviews "
                    "unusual activity. Agents may not disclose the specific reason for a "
                    "compliance review, but must tell the customer what documents are needed and "
                    "the expected timeline, normally 3 to 5 business days. Essential payments "
                    "such as rent can be released by a team lead on request."),
    "LOAN-PAY": ("Loan Payments and Principal Curtailments",
                 "Payments are applied first to fees, then interest due, then principal. A "
                 "payment above the amount due is applied to principal only when the customer "
                 "selects 'principal only' or the payment is sent as a separate principal "
                 "curtailment; otherwise it is held as a prepayment of the next installment. "
                 "Misapplied payments are reallocated with the original effective date."),
    "COMPLAINTS": ("Complaint Handling Standards",
                   "Every complaint is logged with a category, acknowledged within one business "
                   "day and resolved within 15 business days where possible. Replies must be in "
                   "plain language, explain the outcome and the reason, state any refund and its "
                   "posting date, and tell the customer how to escalate, including their right to "
                   "contact the CFPB. Do not promise outcomes that need another team's approval."),
    "PRIVACY": ("Identity Verification in Messages",
                "Never repeat a full account or card number, date of birth or security answer in "
                "a reply. Refer to accounts by their last four digits. Do not ask the customer to "
                "send a PIN, password or one-time code by chat or email."),
    "TONE": ("Customer Communication Style Guide",
             "Open by acknowledging the customer's experience in one sentence, without "
             "repeating blame. Use short paragraphs, the customer's name, and clear dates. Avoid "
             "internal jargon such as 'Reg E', 'provisional', or team names unless explained. "
             "Close with the next step and when the customer will hear from us."),
}
GENERIC_POLICIES = ["COMPLAINTS", "GOODWILL", "PRIVACY", "TONE"]


def _ticket_common(rng):
    """Facts shared by every ticket category."""
    city, state = rng.choice(CITIES)
    return {"city": city, "state": state,
            "card_last4": "{:04d}".format(rng.randrange(10000)),
            "acct_last4": "{:04d}".format(rng.randrange(10000))}


def _d(day):
    return day.strftime("%Y-%m-%d")


def _long_d(day):
    return day.strftime("%B %d, %Y").replace(" 0", " ")


# Each category: setup(rng, facts, start) adds facts and returns the special log rows
# [(date, kind, descriptor, amount)], plus complaint paragraphs, agent notes and policies.

def _setup_unauthorized(rng, f, start):
    m, country, _ = rng.choice(FOREIGN_MERCHANTS)
    online = rng.choice(["GAMESTOP DIGITAL", "BINANCE.US", "STEAMGAMES.COM", "SHEIN.COM",
                         "WISH.COM", "NORDVPN", "XSOLLA *GAMES"])
    n = rng.randint(2, 4)
    rows = []
    total = 0.0
    day = start + datetime.timedelta(days=rng.randint(6, 12))
    for i in range(n):
        amt = round(rng.uniform(40, 480), 2)
        total += amt
        desc = online if i % 2 == 0 else m
        rows.append((day + datetime.timedelta(hours=i * 5), "CARD", desc, -amt))
    f.update(bad_merchant=online, bad_merchant2=m, bad_country=country, bad_count=n,
             bad_total=money(total), bad_date=_long_d(day), card=rng.choice(PRODUCT_CARDS))
    return rows


def _setup_duplicate(rng, f, start):
    m = rng.choice(["BEST BUY #{}", "DELTA AIR 006{}", "MARRIOTT HOTELS {}", "IKEA {}",
                    "LOWES #{}", "TICKETMASTER {}"]).format(rng.randint(100, 999))
    amt = round(rng.uniform(180, 1900), 2)
    day = start + datetime.timedelta(days=rng.randint(5, 14))
    f.update(dup_merchant=m, dup_amount=money(amt), dup_date=_long_d(day),
             card=rng.choice(PRODUCT_CARDS))
    return [(day, "CARD", m, -amt), (day + datetime.timedelta(minutes=3), "CARD", m, -amt)]


def _setup_overdraft(rng, f, start):
    dep = round(rng.uniform(1200, 4200), 2)
    day = start + datetime.timedelta(days=rng.randint(8, 14))
    nfees = rng.randint(2, 3)
    rows = [(day, "DEP", "MOBILE DEPOSIT CHK {}".format(rng.randint(1000, 9999)), dep)]
    for i in range(nfees):  # the small purchases that overdrew the account, then their fees
        desc, kind = rng.choice([("STARBUCKS STORE {}", "POS"), ("SHELL OIL {}", "POS"),
                                 ("CVS/PHARMACY #{}", "POS"), ("KROGER #{}", "POS")])
        rows.append((day + datetime.timedelta(hours=2 + i), kind,
                     desc.format(rng.randint(100, 9999)), -round(rng.uniform(6, 90), 2)))
    for i in range(nfees):
        rows.append((day + datetime.timedelta(days=1, minutes=i), "FEE", "OVERDRAFT ITEM FEE",
                     -35.0))
    f.update(deposit_amount=money(dep), deposit_date=_long_d(day), od_count=nfees,
             od_total=money(35.0 * nfees), employer=rng.choice(EMPLOYERS), overdrawn=True)
    return rows


def _setup_wire(rng, f, start):
    amt = rng.randrange(3000, 60000, 25)
    day = start + datetime.timedelta(days=rng.randint(4, 10))
    country = rng.choice(["Mexico", "the Philippines", "India", "Germany", "Nigeria", "Poland",
                          "Brazil", "Vietnam", "Portugal", "Kenya"])
    bank = rng.choice(["Banco Mercantil", "Metro Commerce Bank", "Union Trust Bank",
                       "Volksbank Mitte", "First Coastal Bank", "Banco do Sul"])
    ref = "FW{}{:06d}".format(day.strftime("%y%m%d"), rng.randrange(10 ** 6))
    f.update(wire_amount="${:,}".format(amt), wire_date=_long_d(day), wire_country=country,
             wire_bank=bank, wire_ref=ref, wire_purpose=rng.choice(
                 ["a house deposit for my parents", "my sister's university tuition",
                  "a payment to a supplier", "medical bills for my mother",
                  "the deposit on a flat I am renting"]))
    return [(day, "WIRE", "INTL WIRE OUT {} {}".format(ref, bank.upper()), -float(amt)),
            (day, "FEE", "INTL WIRE FEE", -45.0)]


def _setup_atm(rng, f, start):
    amt = rng.choice([200, 300, 400, 500, 600, 800])
    day = start + datetime.timedelta(days=rng.randint(5, 12))
    loc = rng.choice(["7-ELEVEN", "CVS", "AIRPORT TERMINAL B", "UNION STATION", "CASINO",
                      "NORTHBANK BRANCH"])
    f.update(atm_amount=money(amt), atm_date=_long_d(day), atm_loc=loc,
             atm_owner=rng.choice(["Cardtronics", "Northbank", "Allpoint", "Euronet"]))
    return [(day, "ATM", "ATM WITHDRAWAL {} {}".format(loc, f["city"].upper()), -float(amt)),
            (day, "FEE", "NON-NETWORK ATM FEE", -3.5)]


def _setup_direct_deposit(rng, f, start):
    emp = rng.choice(EMPLOYERS)
    pay = round(rng.uniform(1400, 4800), 2)
    day = start + datetime.timedelta(days=rng.randint(3, 6))
    f.update(employer=emp, pay_amount=money(pay), pay_prev_date=_long_d(day),
             pay_missing_date=_long_d(day + datetime.timedelta(days=14)))
    return [(day, "ACH", "{} PAYROLL PPD".format(emp.upper()), pay)]


def _setup_travel(rng, f, start):
    m, country, cur = rng.choice(FOREIGN_MERCHANTS)
    day = start + datetime.timedelta(days=rng.randint(5, 11))
    rows = []
    for i in range(rng.randint(2, 3)):
        amt = round(rng.uniform(25, 260), 2)
        rows.append((day + datetime.timedelta(days=i), "CARD", m, -amt))
        rows.append((day + datetime.timedelta(days=i, minutes=1), "FEE",
                     "FOREIGN TRANSACTION FEE", -round(amt * 0.03, 2)))
    f.update(trip_country=country, trip_merchant=m, trip_currency=cur, trip_date=_long_d(day),
             trip_days=rng.randint(7, 16), card=rng.choice(["Travel Elite Visa",
                                                            "Platinum Rewards Visa",
                                                            "Debit Mastercard"]))
    return rows


def _setup_escrow(rng, f, start):
    old = round(rng.uniform(1400, 3200), 2)
    inc = round(rng.uniform(140, 520), 2)
    day = start + datetime.timedelta(days=rng.randint(1, 4))
    f.update(loan_no="ML-{:08d}".format(rng.randrange(10 ** 8)), old_payment=money(old),
             new_payment=money(old + inc), increase=money(inc),
             shortage=money(inc * 12 * rng.uniform(0.6, 0.9)),
             county=rng.choice(["Travis", "Franklin", "Multnomah", "Hillsborough", "Wake",
                                "Dane", "Maricopa", "Hennepin", "Davidson"]))
    return [(day, "ACH", "NORTHBANK MORTGAGE PMT", -round(old + inc, 2))]


def _setup_autopay(rng, f, start):
    bal = round(rng.uniform(600, 5200), 2)
    day = start + datetime.timedelta(days=rng.randint(6, 13))
    interest = round(bal * rng.uniform(0.015, 0.022), 2)
    f.update(card=rng.choice(["Platinum Rewards Visa", "Cash Back Mastercard",
                              "Travel Elite Visa"]), stmt_balance=money(bal),
             autopay_date=_long_d(day), interest=money(interest), late_fee="$40.00")
    return [(day + datetime.timedelta(days=1), "FEE", "LATE PAYMENT FEE", -40.0),
            (day + datetime.timedelta(days=2), "FEE", "PURCHASE INTEREST CHARGE", -interest)]


def _setup_merchant(rng, f, start):
    m = rng.choice(["LUXE FURNITURE CO", "SKYWAY TRAVEL AGENCY", "PEAK FITNESS GEAR",
                    "BRIGHTSMILE DENTAL", "SUNCOAST RESORTS", "METRO ELECTRONICS ONLINE",
                    "URBAN BIKE WORKS"])
    amt = round(rng.uniform(250, 2600), 2)
    day = start + datetime.timedelta(days=rng.randint(1, 5))
    f.update(m_merchant=m, m_amount=money(amt), m_date=_long_d(day),
             m_item=rng.choice(["a sofa", "a flight and hotel package", "a rowing machine",
                                "a treatment plan that was cancelled", "a resort booking",
                                "a laptop", "an electric bike"]),
             m_promised=_long_d(day + datetime.timedelta(days=rng.randint(7, 12))),
             card=rng.choice(PRODUCT_CARDS))
    return [(day, "CARD", m, -amt)]


def _setup_frozen(rng, f, start):
    amt = round(rng.uniform(4000, 26000), 2)
    day = start + datetime.timedelta(days=rng.randint(6, 12))
    f.update(big_deposit=money(amt), frozen_date=_long_d(day),
             rent=money(rng.choice([1150, 1375, 1600, 1850, 2100, 2450])),
             source=rng.choice(["the sale of my car", "an inheritance from my aunt",
                                "a bonus from my employer", "a refund from my old landlord",
                                "the proceeds from selling my boat"]))
    return [(day, "DEP", "BRANCH DEPOSIT CASHIERS CHECK", amt),
            (day + datetime.timedelta(days=1), "HOLD", "ACCOUNT RESTRICTION - REVIEW", 0.0)]


def _setup_loan_misapplied(rng, f, start):
    loan = rng.choice(["auto loan", "personal loan", "boat loan"])
    reg = round(rng.uniform(280, 720), 2)
    extra = rng.choice([500, 1000, 1500, 2000, 2500, 3000])
    day = start + datetime.timedelta(days=rng.randint(5, 12))
    f.update(loan=loan, loan_no="CL-{:07d}".format(rng.randrange(10 ** 7)),
             reg_payment=money(reg), extra=money(extra), extra_date=_long_d(day),
             lname=rng.choice(["2022 Honda CR-V", "2021 Toyota RAV4", "home renovation",
                               "debt consolidation", "2023 Subaru Outback", "fishing boat"]))
    return [(day, "XFER", "NORTHBANK {} PMT".format(loan.upper()), -float(extra)),
            (day - datetime.timedelta(days=3), "XFER", "NORTHBANK {} PMT".format(loan.upper()),
             -reg)]


CATEGORIES = [
    {
        "name": "Unauthorized card transactions",
        "setup": _setup_unauthorized,
        "policies": ["REG-E", "REG-Z", "LIAB"],
        "complaint": [
            "I am writing because I found {bad_count} charges on my {card} ending in {card_last4} "
            "that I did not make. They started on {bad_date} and add up to {bad_total}. Some are "
            "from {bad_merchant}, which I have never used, and others are from {bad_merchant2} in "
            "{bad_country}. I have not been to {bad_country} in years and my card has been in my "
            "wallet the whole time.",
            "When I called on the day I noticed, the first person I spoke to said the charges "
            "looked like normal activity because my card chip was used. That is not possible. "
            "I was at work in {city} all day and I can prove it. I asked for the card to be "
            "blocked and I am not sure that was even done, because another charge came through "
            "the next morning.",
            "I have been a customer for many years and I have never had a problem like this. I "
            "do not understand how your fraud system let {bad_count} charges go through from two "
            "different countries within a day without sending me a single text. I get alerts "
            "when I buy coffee, but not for this?",
            "I need the money back. {bad_total} is a lot for me right now and my statement "
            "closes soon. I do not want to pay interest on charges I never made, and I do not "
            "want this to affect my credit score.",
        ],
        "notes": [
            "Customer called re {bad_count} unrecognized txns on card x{card_last4}. Verified ID "
            "via OTP. Card status shows blocked at 16:42, one further auth attempt declined.",
            "Fraud claim opened, claim type card-not-present + counterfeit. Provisional credit "
            "not yet issued; awaiting fraud ops review. Replacement card ordered, standard "
            "shipping.",
            "Customer chatted asking for update, upset no provisional credit. Told 10 business "
            "days. Customer says earlier agent told them it was 'normal activity'.",
        ],
        "ask": "Summarise the complaint, say which policy applies to each charge and draft a "
               "reply to the customer that explains the claim timeline and provisional credit.",
    },
    {
        "name": "Duplicate card charge",
        "setup": _setup_duplicate,
        "policies": ["REG-Z", "MERCHANT", "REG-E"],
        "complaint": [
            "On {dup_date} I made one purchase at {dup_merchant} for {dup_amount} with my {card} "
            "ending in {card_last4}. My statement shows the same charge twice, three minutes "
            "apart. I only signed one receipt and I only received one order confirmation.",
            "I called the merchant and they told me that they only see one transaction on their "
            "side and that the second one must be a bank error. Then I called Northbank and was "
            "told that it must be the merchant. I feel like I am being passed back and forth "
            "while my money is gone.",
            "Because of the double charge my available credit went down and another purchase "
            "I tried to make for my family was declined at the register, which was embarrassing. "
            "I want the duplicate removed and I want to know why this happened.",
            "I have attached my receipt and the order confirmation email. Please look at the "
            "authorization codes, I am sure you will see that only one of them is real.",
        ],
        "notes": [
            "Customer reports duplicate posting {dup_merchant} {dup_amount} on {dup_date}. Both "
            "items posted, different auth codes. Advised to contact merchant first.",
            "Customer called back; merchant says one transaction. Customer frustrated at being "
            "redirected. Requested receipt upload via secure message.",
        ],
        "ask": "Summarise the complaint, say which policy applies and draft a reply to the "
               "customer that tells them what happens next with the duplicate charge.",
    },
    {
        "name": "Overdraft fees after deposit",
        "setup": _setup_overdraft,
        "policies": ["OD-FEE", "HOLDS", "GOODWILL"],
        "complaint": [
            "On {deposit_date} I deposited a check for {deposit_amount} through the mobile app. "
            "The app said it was accepted. The next day I was charged {od_count} overdraft fees "
            "of $35 each, {od_total} in total, for small purchases I made because I thought the "
            "money was there.",
            "Nobody told me the deposit would be held. I did not get an email or a notice in the "
            "app. If I had known I would have waited. It feels like the bank let the purchases go "
            "through just so it could charge the fees.",
            "I also do not understand the order the transactions were posted in. The largest "
            "payment seems to have gone first even though I made it last, which caused more of "
            "the small ones to overdraw the account.",
            "I work hard for my money and {od_total} in fees is unfair when the deposit was "
            "sitting in your system the whole time. I am asking for all the fees to be refunded "
            "and for an explanation of the hold.",
        ],
        "notes": [
            "Mobile deposit {deposit_amount} on {deposit_date}: exception hold placed, reason "
            "code 'large deposit'. Hold notice flag = not sent (app notification error?).",
            "{od_count} OD fees posted. Customer had one goodwill refund 8 months ago ($35). "
            "Further refund needs team lead approval.",
        ],
        "ask": "Summarise the complaint, say which policy applies and whether the fees can be "
               "refunded, and draft a reply to the customer.",
    },
    {
        "name": "International wire not received",
        "setup": _setup_wire,
        "policies": ["WIRE", "REG-E", "COMPLAINTS"],
        "complaint": [
            "On {wire_date} I sent an international wire of {wire_amount} to {wire_bank} in "
            "{wire_country}, reference {wire_ref}. It was for {wire_purpose}. I was told at the "
            "branch that it would arrive in one to three business days. It has now been well "
            "over a week and the money has not arrived.",
            "The receiving bank says they have no record of it. Northbank shows the wire as "
            "'completed'. I have paid a $45 fee and I cannot get a straight answer from anyone "
            "about where the money actually is.",
            "This is causing real problems for my family. There is a deadline and if the money "
            "does not arrive we will lose the deposit. I have called three times and each time I "
            "was told someone would call me back within 48 hours. Nobody has.",
            "I want the wire traced today, I want the tracking number, and I want to know who is "
            "responsible. If the money is lost I expect Northbank to return it to my account "
            "along with the fee.",
        ],
        "notes": [
            "Wire {wire_ref} released {wire_date} via correspondent. Status: completed at our "
            "end. Customer says beneficiary bank has no record.",
            "Trace not yet opened (customer called on day 4, advised to wait 5 business days). "
            "Callback promised, no callback logged.",
        ],
        "ask": "Summarise the complaint, say which policy applies and what the agent should do "
               "now, and draft a reply to the customer.",
    },
    {
        "name": "ATM did not dispense cash",
        "setup": _setup_atm,
        "policies": ["ATM", "REG-E", "GOODWILL"],
        "complaint": [
            "On {atm_date} I used the ATM at the {atm_loc} in {city} to take out {atm_amount}. "
            "The machine made noises like it was counting money, then showed an error and gave "
            "my card back. No cash came out. When I checked my balance, the full {atm_amount} "
            "had been taken out of my account, plus a fee.",
            "I went inside and asked the staff, but they said they do not own the machine and "
            "gave me a phone number that just went to a recording. I have a photo of the error "
            "on the screen and my receipt showing the time.",
            "That money was for my groceries and bills for the week. I am on a fixed income and "
            "being short {atm_amount} means I may not be able to pay my electricity bill on time.",
            "I want the money back and the ATM fee refunded. I do not think I should be charged "
            "for a withdrawal that did not happen.",
        ],
        "notes": [
            "ATM claim: {atm_amount} at {atm_loc}, owner {atm_owner}. Customer has photo of error "
            "screen. Claim sent to network.",
            "Customer asks for provisional credit; told network ATMs take longer. Customer "
            "upset, on fixed income.",
        ],
        "ask": "Summarise the complaint, say which policy applies and when the customer should "
               "get their money, and draft a reply to the customer.",
    },
    {
        "name": "Missing direct deposit",
        "setup": _setup_direct_deposit,
        "policies": ["DD", "COMPLAINTS", "OD-FEE"],
        "complaint": [
            "My paycheck from {employer} normally arrives every other Friday. The last one, "
            "{pay_amount}, came on {pay_prev_date}. The next one was due on {pay_missing_date} "
            "and it is not in my account. My employer says they sent it on time and that the "
            "problem is with the bank.",
            "I have automatic payments coming out for my rent and my car loan and I am worried "
            "they will bounce. I cannot afford overdraft fees on top of everything else.",
            "When I asked in chat I was told to contact my employer. I already did that. They "
            "sent me a confirmation from their payroll company with a trace number. I feel like "
            "nobody at Northbank is even looking.",
            "Please check whether the deposit was received and rejected, because I recently "
            "changed my account number after a fraud case and I am worried the old number was "
            "used.",
        ],
        "notes": [
            "Customer reports payroll from {employer} missing. Last payroll credit {pay_amount} on "
            "{pay_prev_date}. No ACH credit in receipt log under current account.",
            "Possible: employer using closed account number (account replaced after fraud case "
            "last month). Returned-item log not yet checked.",
        ],
        "ask": "Summarise the complaint, say which policy applies and what to check, and draft a "
               "reply to the customer.",
    },
    {
        "name": "Card declined abroad and foreign fees",
        "setup": _setup_travel,
        "policies": ["TRAVEL", "GOODWILL", "LIAB"],
        "complaint": [
            "Before my trip to {trip_country} I set a travel notice in the app for {trip_days} "
            "days starting {trip_date}. Despite that, my {card} ending in {card_last4} was "
            "declined over and over, at restaurants, at a pharmacy and at {trip_merchant}.",
            "Each time I got a text asking me to confirm the purchase, I replied YES, and the "
            "card still did not work for hours. I had to borrow money from a stranger to pay for "
            "a taxi. It was humiliating and frightening to be in another country with no way to "
            "pay.",
            "When I got home I saw that I was charged foreign transaction fees on every purchase "
            "that did go through, even the ones that were first declined and retried. I was told "
            "when I opened the account that these fees would not apply to me.",
            "I would like the fees refunded, an explanation of why the travel notice did not "
            "work, and some assurance that this will not happen on my next trip.",
        ],
        "notes": [
            "Travel notice on file for {trip_country}, correct dates. Multiple fraud-model "
            "declines at {trip_merchant}. Customer replied YES to alerts; release delay on our "
            "side.",
            "Customer requests FX fee refund. Check card product: FX fee waived only on Travel "
            "Elite / Premier debit.",
        ],
        "ask": "Summarise the complaint, say which policy applies to the declines and to the "
               "fees, and draft a reply to the customer.",
    },
    {
        "name": "Mortgage payment increase (escrow)",
        "setup": _setup_escrow,
        "policies": ["ESCROW", "COMPLAINTS", "TONE"],
        "complaint": [
            "My mortgage payment for loan {loan_no} went up from {old_payment} to {new_payment} "
            "without any warning that I can find. That is {increase} more every month. Nobody "
            "called me and I only noticed because my checking account was almost empty.",
            "I was told the increase is because of an escrow shortage of {shortage}. But my "
            "property taxes in {county} County went down this year after I appealed the "
            "assessment, so I do not understand how there can be a shortage.",
            "I sent the corrected tax bill to Northbank in the spring. It looks like it was "
            "never used. I also changed homeowner's insurance companies and my new premium is "
            "lower, but the escrow analysis still shows the old amount.",
            "I want a new escrow analysis using the right numbers and my payment put back to "
            "the correct amount. I also want any overpayment refunded.",
        ],
        "notes": [
            "Escrow analysis run, shortage {shortage}, new payment {new_payment}. Analysis used "
            "prior-year tax figure; corrected tax bill in imaging system, not indexed.",
            "Customer requests re-analysis. Insurance declarations page received, carrier change "
            "not reflected in escrow.",
        ],
        "ask": "Summarise the complaint, say which policy applies and what should happen to the "
               "payment, and draft a reply to the customer.",
    },
    {
        "name": "AutoPay failed, late fee charged",
        "setup": _setup_autopay,
        "policies": ["AUTOPAY", "REG-Z", "GOODWILL"],
        "complaint": [
            "I have had AutoPay set up on my {card} for years to pay the full statement balance. "
            "This month the statement balance was {stmt_balance}, and the payment due on "
            "{autopay_date} never came out of my checking account. I was charged a {late_fee} "
            "late fee and {interest} in interest.",
            "I did not change anything. The funding account is the same one it has always been "
            "and it had plenty of money in it. The app still shows AutoPay as active.",
            "I am most worried about my credit report. I am in the middle of applying for a "
            "mortgage and a late payment would be a disaster. I need written confirmation that "
            "this will not be reported.",
            "Please reverse the late fee and the interest and tell me why the payment was not "
            "made.",
        ],
        "notes": [
            "AutoPay enrolment active, funding account open with sufficient balance. AutoPay "
            "batch for cycle shows 'not initiated', known incident INC-{incident}.",
            "Customer asks for credit bureau assurance. Payment was less than 30 days late; "
            "confirm no reporting.",
        ],
        "ask": "Summarise the complaint, say which policy applies and what refunds are due, and "
               "draft a reply to the customer.",
    },
    {
        "name": "Merchant refund never received",
        "setup": _setup_merchant,
        "policies": ["MERCHANT", "REG-Z", "REG-E"],
        "complaint": [
            "On {m_date} I paid {m_merchant} {m_amount} with my {card} ending in {card_last4} "
            "for {m_item}. The order was cancelled by the merchant and they promised me in "
            "writing that the refund would be back on my card by {m_promised}.",
            "That date has come and gone. The merchant has stopped answering emails and their "
            "phone line is disconnected. I looked them up and there are many other customers "
            "online saying the same thing.",
            "When I tried to open a dispute in the app it said the transaction was not eligible. "
            "I do not know why. I have the cancellation email and the promise of a refund.",
            "I need you to get my money back. {m_amount} is a lot of money and I did the right "
            "thing by trying with the merchant first.",
        ],
        "notes": [
            "Customer wants to dispute {m_merchant} {m_amount}. App dispute blocked: "
            "transaction older than app window. Manual dispute possible.",
            "Customer has cancellation email with refund promise dated {m_promised}. Advised to "
            "upload documents.",
        ],
        "ask": "Summarise the complaint, say which policy applies and whether a dispute can "
               "still be filed, and draft a reply to the customer.",
    },
    {
        "name": "Account restricted after large deposit",
        "setup": _setup_frozen,
        "policies": ["HOLD-REVIEW", "HOLDS", "COMPLAINTS"],
        "complaint": [
            "On {frozen_date} I deposited a cashier's check for {big_deposit} at the branch in "
            "{city}. It was from {source}. The next day my account was restricted. I cannot use "
            "my debit card, I cannot pay bills online and I cannot withdraw money.",
            "No one will tell me why. The branch said to call the phone line, the phone line "
            "said to go to the branch. I have provided my ID twice already.",
            "My rent of {rent} is due in a few days. If I cannot pay it I will get a late fee and "
            "it could affect my lease. I also have medication to pick up.",
            "I have done nothing wrong. I want to know what documents you need and how long "
            "this will take, and I want my rent paid on time.",
        ],
        "notes": [
            "Account restricted by review team after {big_deposit} cashier's check deposit. "
            "Reason code withheld from frontline. Documents requested: source of funds.",
            "Customer asks to release rent payment {rent}. Team lead can release essential "
            "payments; request not yet raised.",
        ],
        "ask": "Summarise the complaint, say which policy applies and what the agent can and "
               "cannot tell the customer, and draft a reply to the customer.",
    },
    {
        "name": "Extra loan payment misapplied",
        "setup": _setup_loan_misapplied,
        "policies": ["LOAN-PAY", "COMPLAINTS", "TONE"],
        "complaint": [
            "On {extra_date} I made an extra payment of {extra} on my {loan} {loan_no} for the "
            "{lname}. My regular payment of {reg_payment} had already been made that month. I "
            "wanted the extra money to go to principal so I could pay the loan off early.",
            "Instead, my statement shows the payment was held and applied to next month's "
            "installment, and the principal balance did not change. I have been paying interest "
            "on money I already paid you.",
            "I did this once before and it went to principal. Nobody told me that I needed to "
            "choose a special option this time, and the app does not make it clear.",
            "I want the payment moved to principal as of the date I made it, and the extra "
            "interest I was charged refunded.",
        ],
        "notes": [
            "Extra payment {extra} posted {extra_date} as prepayment of next installment (no "
            "principal-only flag). Previous extra payment last year was flagged principal-only.",
            "Customer requests reallocation effective {extra_date}. Loan servicing can backdate.",
        ],
        "ask": "Summarise the complaint, say which policy applies and how the payment should be "
               "corrected, and draft a reply to the customer.",
    },
]

GENERIC_COMPLAINT = [
    "To be honest, the way I have been treated has been worse than the problem itself. I have "
    "repeated my story to {calls} different people and every one of them asked me for the same "
    "details again. Nobody seems to read the notes on my account.",
    "I have been a Northbank customer since {since_year}. I have my checking, savings and a "
    "credit card with you, and I recommended you to my {relative}. Right now I am seriously "
    "thinking of moving everything to another bank.",
    "I would appreciate a call back rather than another email. The best time to reach me is "
    "after {hour} p.m. on weekdays. Please do not ask me to start again from the beginning.",
    "If this cannot be resolved quickly I will file a complaint with the Consumer Financial "
    "Protection Bureau. I do not want to do that, but I feel I have no other choice.",
    "I have kept copies of everything, including screenshots of the app and the names of "
    "the people I spoke to, and I am happy to send them if it will help.",
]
GENERIC_NOTES = [
    "Customer requested callback after {hour} p.m. Callback task created, queue: complaints.",
    "Reviewed prior contacts: {calls} contacts on this issue in the last two weeks. Customer "
    "tone escalating, mentions closing accounts.",
    "Sent secure message acknowledging complaint, reference provided. No response yet.",
    "Team lead consulted; asked for full summary before approving any refund.",
]


def estimate_tokens(text):
    """Token count of `text` under a Llama-style BPE that splits numbers into single digits
    (Llama 2, SmolLM2/GPT-2 style vocabularies): one token per digit, punctuation mark and
    newline run, one per ordinary word (two when long), about one per three letters of an
    all-caps word. Calibrated on these tickets against `flywheel tokenize` with
    models/SmolLM2-135M-Instruct.Q4_1.gguf, where it is within about 2%."""
    n = len(re.findall(r"\n+", text))
    for word in re.findall(r"\d|[A-Za-z]+|[^\sA-Za-z\d]", text):
        if not word.isalpha():
            n += 1
        elif word.isupper() and len(word) > 1:
            n += math.ceil(len(word) / 3)
        else:
            n += 2 if len(word) >= 10 else 1
    return int(round(n * TOKEN_CALIBRATION))


def _log_rows(rng, f, start, special, n_rows):
    """Filler rows plus the category's special rows, sorted by time, opening and closing
    balance."""
    rows = list(special)
    n_filler = max(0, n_rows - len(rows))
    for _ in range(n_filler):
        desc, kind = rng.choice(LOG_MERCHANTS)
        desc = desc.format(n=rng.randint(100, 9999), p=rng.choice(FIRST_NAMES).upper(),
                           c="".join(rng.choice(string.ascii_uppercase + string.digits)
                                     for _ in range(6)))
        amt = {"POS": (6, 180), "CARD": (8, 140), "RECUR": (9, 25), "ACH": (45, 260),
               "ATM": (40, 200), "XFER": (20, 400)}[kind]
        when = start + datetime.timedelta(days=rng.randint(0, 24), hours=rng.randint(7, 21),
                                          minutes=rng.randint(0, 59))
        rows.append((when, kind, desc, -round(rng.uniform(*amt), 2)))
    rows.sort(key=lambda r: r[0])
    # enough opening balance to stay positive, except where the story is an overdraft
    spent = -sum(amt for _, _, _, amt in rows if amt < 0)
    if f.get("overdrawn"):
        bal = round(rng.uniform(150, 600), 2)
    else:
        bal = round(spent + rng.uniform(250, 4000), 2)
    lines = ["Opening balance {}: {}".format(_d(start), money(bal))]
    for when, kind, desc, amt in rows:
        bal += amt
        lines.append("{} | {} | {} | {}".format(
            _d(when), kind, desc, ("+" if amt > 0 else "") + "{:,.2f}".format(amt)))
    lines.append("Closing balance: {}".format(money(bal)))
    return lines


def _agent_note(rng, when, text):
    return "{} | {} (ID {}) | {} | {}".format(
        when.strftime("%Y-%m-%d %H:%M"), rng.choice(AGENT_NAMES), rng.randint(1000, 9999),
        rng.choice(CHANNELS), text)


def _policy_block(key, rev):
    title, text = POLICIES[key]
    kb = 1040 + 7 * sorted(POLICIES).index(key)
    return "[KB-{} rev {}] {}\n{}".format(kb, rev, title, text)


def make_ticket(rng, cat, ticket_id, first, last, target_tokens):
    f = _ticket_common(rng)
    start = datetime.datetime(2024, 1, 1) + datetime.timedelta(days=rng.randint(0, 500),
                                                               hours=rng.randint(8, 18))
    special = cat["setup"](rng, f, start)
    opened = start + datetime.timedelta(days=rng.randint(25, 32), hours=rng.randint(0, 8),
                                        minutes=rng.randint(0, 59))
    f.update(calls=rng.randint(3, 6), since_year=rng.randint(1998, 2019),
             relative=rng.choice(["husband", "wife", "brother", "mother", "colleagues",
                                  "neighbour", "daughter"]),
             hour=rng.randint(4, 7), incident=rng.randint(10000, 99999))
    name = "{} {}".format(first, last)
    f["name"] = name

    header = [
        "Ticket #{:06d} | opened {} | channel: {} | priority: {} | category: {}".format(
            ticket_id, opened.strftime("%Y-%m-%d %H:%M"), rng.choice(CHANNELS),
            rng.choice(["P2", "P2", "P3", "P1"]), cat["name"]),
        "",
        "CUSTOMER PROFILE",
        "Name: {} | Customer ID: C{:09d} | Segment: {}".format(
            name, rng.randrange(10 ** 9), rng.choice(SEGMENTS)),
        "Customer since: {} | Location: {}, {} | Preferred contact: {}".format(
            f["since_year"], f["city"], f["state"], rng.choice(["phone", "email", "app",
                                                               "text message"])),
        "Accounts: {} x{} | {} x{}".format(
            rng.choice(CHECKING_PRODUCTS), f["acct_last4"],
            f.get("card", rng.choice(PRODUCT_CARDS)), f["card_last4"]),
        "Email: {}.{}***@{} | Prior complaints (12 mo): {} | Goodwill refunds (12 mo): {}".format(
            first[0].lower(), last[:3].lower().replace("'", ""),
            rng.choice(["gmail.com", "outlook.com", "yahoo.com", "icloud.com"]),
            rng.randint(0, 2), rng.randint(0, 1)),
    ]
    # the log and the agent-note stamps use private generators so re-rendering while the
    # ticket grows toward its length target stays deterministic
    log_seed = rng.randrange(2 ** 32)
    n_rows = rng.randint(10, 14)
    log = _log_rows(random.Random(log_seed), f, start, special, n_rows)

    complaint = [fill(p, f) for p in cat["complaint"]]
    generic = [fill(p, f) for p in GENERIC_COMPLAINT]
    rng.shuffle(generic)
    # the category's story first, generic paragraphs after it, the customer's demand last
    complaint_paras = complaint[:2]
    closing = complaint[-1]
    extra_paras = complaint[2:-1] + generic

    notes_src = [fill(n, f) for n in cat["notes"]]
    generic_notes = [fill(n, f) for n in GENERIC_NOTES]
    rng.shuffle(generic_notes)
    notes = notes_src[:2]
    extra_notes = notes_src[2:] + generic_notes

    policies = list(cat["policies"][:1])
    generic_policies = [p for p in GENERIC_POLICIES if p not in cat["policies"]]
    rng.shuffle(generic_policies)
    extra_policies = list(cat["policies"][1:]) + generic_policies
    revs = {k: rng.randint(2, 9) for k in sorted(POLICIES)}

    note_seed = rng.randrange(2 ** 32)

    def render():
        rng_notes = random.Random(note_seed)
        when = opened - datetime.timedelta(days=len(notes) + 1)
        note_lines = []
        for i, text in enumerate(notes):
            stamp = when.replace(hour=rng_notes.randint(8, 19), minute=rng_notes.randint(0, 59))
            note_lines.append(_agent_note(rng_notes, stamp + datetime.timedelta(days=i), text))
        parts = header + ["", "TRANSACTION LOG (account x{}, card x{})".format(
            f["acct_last4"], f["card_last4"])] + log
        parts += ["", "CUSTOMER MESSAGE", "Dear Northbank,", ""]
        for p in complaint_paras + [closing]:
            parts += [p, ""]
        parts += ["Regards,", name, "", "PRIOR AGENT NOTES"] + note_lines
        parts += ["", "RETRIEVED POLICY EXCERPTS"]
        for k in policies:
            parts += [_policy_block(k, revs[k]), ""]
        parts += ["TASK", cat["ask"]]
        return "\n".join(parts)

    text = render()
    # grow toward the target: take in turn an extra complaint paragraph, agent note and policy
    # excerpt; when those run out, add transaction rows (up to 25)
    growth = [(extra_paras, complaint_paras), (extra_notes, notes), (extra_policies, policies)]
    turn = 0
    while estimate_tokens(text) < target_tokens:
        open_pools = [(src, dst) for src, dst in growth if src]
        if open_pools:
            src, dst = open_pools[turn % len(open_pools)]
            turn += 1
            dst.append(src.pop(0))
        elif n_rows < 25:
            n_rows += 1
            log = _log_rows(random.Random(log_seed), f, start, special, n_rows)
        else:
            break
        text = render()
    return text


# ---------------------------------------------------------------------------------------------
# Assembly
# ---------------------------------------------------------------------------------------------

def build(seed, total):
    rng = random.Random(seed)
    n_long = round(total * SHARE_LONG)
    n_gen = max(1, round(total * SHARE_GENERATION))
    n_short = total - n_long - n_gen
    if n_long > n_short + n_gen + 1:
        raise SystemExit("too many long lines to keep them apart")

    shorts, seen = [], set()
    while len(shorts) < n_short:
        q = make_short(rng)
        if q in seen:  # keep duplicates out: redraw
            continue
        seen.add(q)
        shorts.append(q)

    ids = rng.sample(range(100000, 1000000), n_long)
    names = rng.sample([(fn, ln) for fn in FIRST_NAMES for ln in LAST_NAMES], n_long)
    # every category about equally often, in shuffled order
    cats = (CATEGORIES * (n_long // len(CATEGORIES) + 1))[:n_long]
    rng.shuffle(cats)
    longs = [make_ticket(rng, cats[i], ids[i], names[i][0], names[i][1],
                         rng.randint(LONG_TOKENS_MIN, LONG_TOKENS_MAX)) for i in range(n_long)]
    gens = make_generations(rng, n_gen)

    others = [("short", q) for q in shorts] + [("generation", g) for g in gens]
    rng.shuffle(others)
    # put each long line into its own gap between the other lines: never two adjacent
    gaps = set(rng.sample(range(len(others) + 1), n_long))
    out, li = [], 0
    for i in range(len(others) + 1):
        if i in gaps:
            out.append(("long", longs[li]))
            li += 1
        if i < len(others):
            out.append(others[i])
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=SEED, help="random seed (default %(default)s)")
    ap.add_argument("--lines", type=int, default=TOTAL_LINES,
                    help="number of requests (default %(default)s)")
    ap.add_argument("--out", default="-", help="output file (default: stdout)")
    args = ap.parse_args()

    rows = build(args.seed, args.lines)
    text = "".join(json.dumps({"class": cls,
                               "messages": [{"role": "system", "content": SYSTEM},
                                            {"role": "user", "content": content}],
                               "max_tokens": MAX_TOKENS[cls]}) + "\n"
                   for cls, content in rows)
    if args.out == "-":
        sys.stdout.write(text)
    else:
        with open(args.out, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
