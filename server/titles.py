"""Job-title classification: free-text title -> contact levels, functions and sub-functions.

Pure and table-driven; every value returned is a string of the vendor taxonomy.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Generic, TypeVar

LEVELS: tuple[str, ...] = (
    "Founder/CXO",
    "Board Members/Trustee",
    "VP",
    "MD",
    "Director",
    "Head",
    "Manager",
    "Staff/Principal",
    "Below Manager",
)
CXO, BOARD, VP, MD, DIRECTOR, HEAD, MANAGER, STAFF, BELOW = LEVELS

FUNCTIONS: dict[str, tuple[str, ...]] = {
    "Top Management": ("Founder & CEO", "GM / MD", "Board Member"),
    "Administration": ("Secretary", "Merger/Acquisition", "Administration - Generic"),
    "Legal /Regulatory & Compliance": ("Regulatory & Compliance", "Legal"),
    "Accounting and related": ("Accounting", "Audit", "Corporate Tax"),
    "Sales": (
        "Inside Sales/Sales Development",
        "Account Executive/Management",
        "Sales - Generic",
        "Client/Customer Relationship/Engagement",
        "Regional/Territory",
        "International/Global",
        "Business Development/Partnership",
    ),
    "Marketing": (
        "Digital Marketing",
        "Online Marketing",
        "Marketing - Generic",
        "Campaign",
        "Events /Tradeshow",
        "Strategic Marketing",
        "Product/Industry/Solutions Marketing",
        "Marketing Operations",
        "Advertising",
    ),
    "Information Technology": (
        "IT Security",
        "Network Management",
        "Infrastructure",
        "Information Systems",
        "Telecommunications",
        "Help Desk/IT Support",
        "IT Admin",
        "IT Systems /Desktop",
        "Information Technology - Generic",
        "IT Applications",
    ),
    "Engineering and Development": (
        "Software Architecture / Technologist",
        "DBA",
        "Engineering/Product Development",
        "UX / UI Design",
        "Technical",
        "Architecture, Design & Planning",
        "Research & Development",
        "Product Management",
        "E-Commerce & Mobile",
    ),
    "Miscellaneous": (
        "Design",
        "Business Intelligence",
        "International / Regional",
        "Risk/Fraud",
        "Associate",
        "Planning",
        "Quality Control/ Assurance",
        "Strategy",
    ),
    "Operations and related": (
        "Operations - Generic",
        "Loss Prevention/Protection",
        "Customer Service/Support",
        "Merchandise Management",
        "Health/Safety",
        "Production",
        "Maintenance",
        "Business Continuity",
        "Project / Program Management",
    ),
    "Supply Chain Management": (
        "Purchasing/Procurement",
        "Category/Commodity",
        "Supply chain - Generic",
        "Inventory",
        "Logistics",
        "Warehouse",
        "Import/Export",
    ),
    "Facility Operations": (
        "Facilities/Branch",
        "Real Estate/Property",
        "Plant",
        "Culinary",
        "Store",
    ),
    "Finance/Banking/Insurance": (
        "Trade and Portfolio",
        "Financial Planning & Investment",
        "Finance",
        "Controller",
        "Cash Management",
        "Risk & Fraud",
        "Banking",
        "Insurance",
    ),
    "Human Resources and related": ("Human Resources", "Training & Development"),
    "Communications/Public Relations": ("Communications", "Media & PR"),
    "Medical & Wellness": (
        "Wellness",
        "Specialist",
        "Pharmacist",
        "Patient Care",
        "Laboratory",
        "Medical - Generic",
        "Doctor",
    ),
    "Education / Teaching": ("Education / Teaching",),
}


@dataclass(frozen=True)
class TitleClass:
    """The taxonomy values derived from one job title, each tuple in taxonomy order."""

    levels: tuple[str, ...]
    functions: tuple[str, ...]
    sub_functions: tuple[str, ...]


# --- normalization -------------------------------------------------------------------------

_STOPWORDS = frozenset(
    "of the for and de des du la le les del al der die das den y et und en".split()
)
# Words written apart or as initials, joined after the abbreviations are spelled out.
_JOINS: dict[tuple[str, ...], tuple[str, ...]] = {
    ("r", "d"): ("research", "development"),
    ("m", "a"): ("mergers", "acquisitions"),
    ("l", "d"): ("learning", "development"),
    ("f", "b"): ("food", "beverage"),
    ("d", "i"): ("diversity", "inclusion"),
    ("p", "l"): ("profit", "loss"),
    ("fp", "a"): ("financial", "planning", "analysis"),
    ("s", "op"): ("sop",),
    ("co", "founder"): ("cofounder",),
    ("co", "founders"): ("cofounders",),
    ("co", "owner"): ("coowner",),
    ("e", "commerce"): ("ecommerce",),
    ("e", "learning"): ("elearning",),
    ("e", "mail"): ("email",),
    ("e", "marketing"): ("emarketing",),
    ("dev", "operations"): ("devops",),
    ("biz", "dev"): ("business", "development"),
    ("bus", "dev"): ("business", "development"),
    ("business", "dev"): ("business", "development"),
    ("corporate", "dev"): ("corporate", "development"),
    ("rev", "operations"): ("revenue", "operations"),
    ("sec", "operations"): ("security", "operations"),
    ("biz", "operations"): ("business", "operations"),
    ("ad", "operations"): ("adops",),
    ("full", "stack"): ("fullstack",),
    ("front", "end"): ("frontend",),
    ("back", "end"): ("backend",),
    ("non", "executive"): ("nonexecutive",),
    ("pre", "sales"): ("presales",),
    ("tele", "sales"): ("telesales",),
    ("head", "hunter"): ("headhunter",),
    ("well", "being"): ("wellbeing",),
    ("health", "care"): ("healthcare",),
    ("help", "desk"): ("helpdesk",),
    ("data", "base"): ("database",),
    ("sys", "administration"): ("system", "administrator"),
    ("trade", "show"): ("tradeshow",),
    ("trade", "shows"): ("tradeshows",),
    ("web", "master"): ("webmaster",),
    ("c", "level"): ("clevel",),
    ("c", "suite"): ("csuite",),
    ("ob", "gyn"): ("obgyn",),
}
_ABBREVIATIONS: dict[str, str] = {
    "vp": "vice president",
    "svp": "senior vice president",
    "evp": "executive vice president",
    "avp": "assistant vice president",
    "rvp": "regional vice president",
    "vicepresident": "vice president",
    "ceo": "chief executive officer",
    "cto": "chief technology officer",
    "cfo": "chief financial officer",
    "cmo": "chief marketing officer",
    "cio": "chief information officer",
    "ciso": "chief information security officer",
    "coo": "chief operating officer",
    "cro": "chief revenue officer",
    "cpo": "chief product officer",
    "chro": "chief human resources officer",
    "cdo": "chief data officer",
    "cso": "chief security officer",
    "gm": "general manager",
    "md": "managing director",
    "sr": "senior",
    "snr": "senior",
    "jr": "junior",
    "jnr": "junior",
    "dir": "director",
    "mgr": "manager",
    "mngr": "manager",
    "mgmt": "management",
    "mngt": "management",
    "eng": "engineer",
    "engr": "engineer",
    "ops": "operations",
    "mktg": "marketing",
    "mkt": "marketing",
    "hr": "human resources",
    "hrbp": "human resources business partner",
    "it": "information technology",
    "qa": "quality assurance",
    "qc": "quality control",
    "ux": "user experience",
    "ui": "user interface",
    "cx": "customer experience",
    "bd": "business development",
    "bdr": "business development representative",
    "sdr": "sales development representative",
    "ae": "account executive",
    "kam": "key account manager",
    "csm": "customer success manager",
    "csr": "customer service representative",
    "ea": "executive assistant",
    "pr": "public relations",
    "bi": "business intelligence",
    "rn": "registered nurse",
    "dba": "database administrator",
    "sre": "site reliability engineer",
    "sysadmin": "system administrator",
    "cybersecurity": "cyber security",
    "gtm": "go to market",
    "scm": "supply chain management",
    "revops": "revenue operations",
    "bizops": "business operations",
    "secops": "security operations",
    "asst": "assistant",
    "assoc": "associate",
    "admin": "administration",
    "exec": "executive",
    "acct": "account",
    "acctg": "accounting",
    "coord": "coordinator",
    "rep": "representative",
    "reps": "representatives",
    "dept": "department",
    "corp": "corporate",
    "intl": "international",
    "natl": "national",
    "govt": "government",
    "svc": "service",
    "svcs": "services",
    "cust": "customer",
    "prof": "professor",
    "pres": "president",
    "chmn": "chairman",
    "supv": "supervisor",
    "mfg": "manufacturing",
    "organisation": "organization",
    "organisational": "organizational",
    "programme": "program",
    "programmes": "programs",
    "centre": "center",
    "labour": "labor",
    "adviser": "advisor",
    "advisers": "advisors",
    "counsellor": "counselor",
    "fibre": "fiber",
    "fulfilment": "fulfillment",
    "paediatrician": "pediatrician",
}
_MAX_JOIN = max(len(key) for key in _JOINS)
_JOIN_STARTS = frozenset(key[0] for key in _JOINS)
_ELISION = re.compile(r"\b[dl]['’](?=\w)")
_INITIALS = re.compile(r"\b(\w)\.(?=\w\b)")
_NON_WORD = re.compile(r"[\W_]+")


def _fold(text: str) -> str:
    """Lowercase and strip accents; non-Latin letters are kept as they are."""
    if text.isascii():
        return text.lower()
    text = _strip_marks(unicodedata.normalize("NFKD", text)).casefold()
    return _strip_marks(unicodedata.normalize("NFKD", text))


def _strip_marks(text: str) -> str:
    return "".join(ch for ch in text if not unicodedata.combining(ch))


def _spelled(token: str) -> list[str]:
    expanded = _ABBREVIATIONS.get(token)
    return [token] if expanded is None else expanded.split()


def _join(tokens: list[str]) -> list[str]:
    """Rewrite the token pairs of `_JOINS`, left to right."""
    out: list[str] = []
    i = 0
    while i < len(tokens):
        if tokens[i] not in _JOIN_STARTS:
            out.append(tokens[i])
            i += 1
            continue
        for size in range(min(_MAX_JOIN, len(tokens) - i), 1, -1):
            joined = _JOINS.get(tuple(tokens[i : i + size]))
            if joined is not None:
                out.extend(joined)
                i += size
                break
        else:
            out.append(tokens[i])
            i += 1
    return out


def normalize_title(title: str) -> str:
    """Canonical form of a title: lowercase ASCII-folded words, abbreviations spelled out.

    Punctuation becomes spaces, connectives ("of", "the", "for", "and", "&") are dropped,
    so "VP of Sales & Marketing" and "vice president sales and marketing" are equal.
    Idempotent: normalizing a normalized title returns it unchanged.
    """
    text = _fold(title)
    if "'" in text or "’" in text:
        text = _ELISION.sub("", text).replace("'", "").replace("’", "")
    if "." in text:
        text = _INITIALS.sub(r"\1", text)
    text = text.replace("@", " at ")
    words = [w for t in _NON_WORD.split(text) if t and t not in _STOPWORDS for w in _spelled(t)]
    return " ".join(_join(words))


# --- rule tables ---------------------------------------------------------------------------
# Phrases are written naturally and normalized when the tables are built, so "IT support"
# is stored as "information technology support". The longest phrase wins, left to right.

# fmt: off
_STRONG_LEVELS: dict[str, tuple[str, ...]] = {
    CXO: (
        "chief", "founder", "cofounder", "cofounders", "founding partner", "owner", "coowner",
        "business owner", "franchise owner", "principal owner", "proprietor", "entrepreneur",
        "president", "presidente", "managing partner", "general partner", "equity partner",
        "name partner", "executive partner", "cxo", "clevel", "csuite", "cao", "cbo", "cco",
        "cdao", "caio", "cgo", "clo", "cno", "cvo", "directeur general", "director general",
        "pdg", "consejero delegado", "amministratore delegato", "fundador",
        "fundadora", "fondateur", "fondatrice", "grunder", "grunderin", "inhaber", "inhaberin",
        "propietario", "propietaria", "dueno", "duena", "vorstand", "vorstandsvorsitzender",
        "vorstandsvorsitzende", "provost", "chancellor", "general counsel",
    ),
    BOARD: (
        "board", "board member", "member board", "board directors", "board director",
        "director board", "board trustees", "board governors", "board advisor",
        "advisory board", "advisory board member", "trustee", "trustees", "chairman",
        "chairwoman", "chairperson", "chair", "vice chair", "vice chairman",
        "non-executive director", "independent director", "executive chairman",
        "member at large", "governor", "aufsichtsrat", "aufsichtsratsvorsitzender", "beirat",
        "consejero", "consejera",
    ),
    VP: (
        "vice president", "vicepresidente", "vice presidente", "vice presidenta",
        "vizeprasident", "vizeprasidentin",
    ),
    MD: (
        "managing director", "general manager", "gerente general", "geschaftsfuhrer",
        "geschaftsfuhrerin", "geschaftsleitung", "country manager", "general management",
    ),
    DIRECTOR: (
        "director", "directeur", "directrice", "directora", "diretor", "diretora", "direktor",
        "direktorin", "direttore", "direttrice", "chief of staff", "associate general counsel",
        "deputy general counsel", "assistant general counsel",
    ),
    HEAD: (
        "head", "leader", "jefe", "jefa", "leiter", "leiterin", "department head",
        "department chair", "chief engineer", "editor in chief", "chief of police",
        "police chief", "fire chief", "head teacher", "headteacher", "headmaster",
        "headmistress", "school principal", "vice principal", "dean", "chef de service",
        "practice leader", "executive chef", "head chef",
    ),
    MANAGER: (
        "manager", "managers", "assistant general manager", "supervisor", "supervisors",
        "superintendent", "foreman", "forewoman", "team leader", "team lead", "shift leader",
        "shift lead", "teamleiter", "teamleiterin", "gerente", "gerant", "gerante",
        "responsable", "responsabile", "gestor", "gestora", "encargado", "encargada",
        "chef de projet", "chef d'equipe", "chef de produit", "managing editor", "controller",
        "comptroller", "treasurer",
    ),
}
_WEAK_LEVELS: dict[str, tuple[str, ...]] = {
    CXO: (
        "senior partner", "associate partner", "junior partner", "salaried partner",
        "venture partner", "operating partner", "partner emeritus",
    ),
    STAFF: (
        "senior", "lead", "principal", "staff", "architect", "fellow", "distinguished",
        "expert", "iii", "iv",
    ),
    # Phrases that only stop a word inside them from counting as a level.
    BELOW: (
        "junior", "product owner", "process owner", "service owner", "data owner",
        "system owner", "account owner", "account executive", "lead generation",
        "staff accountant", "staff nurse", "staff writer", "staff auditor", "staff member",
        "chief resident", "business partner", "people partner", "client partner", "partners",
        "partner success", "partner marketing", "partner sales", "partner development",
        "partner account", "partner programs", "partner program", "partner enablement",
        "partner operations", "partner relations", "partner solutions", "partner alliances",
        "channel partner", "secretary board", "board certified", "office of the ceo",
        "office of the president", "chief executive assistant", "stock controller",
        "credit controller", "document controller", "quality controller",
        "inventory controller", "air traffic controller",
    ),
}

# Words that are a level only when they open the title: "Partner, Audit" but not "Talent Partner".
_LEADING_LEVELS: dict[str, tuple[str, ...]] = {
    CXO: ("partner", "socio", "socia", "associe", "associee"),
}

# Modifiers resolved after matching: "@region"/"@global" refine Sales or stand alone,
# "@risk" lands in Finance when the title is a finance one, else in Miscellaneous.
_REGION, _GLOBAL, _RISK = "@region", "@global", "@risk"

_STRONG_FUNCTIONS: dict[str, tuple[str, ...]] = {
    "Founder & CEO": (
        "founder", "cofounder", "cofounders", "founding partner", "managing partner",
        "general partner", "equity partner", "owner", "coowner", "business owner",
        "franchise owner", "proprietor", "entrepreneur", "president", "presidente",
        "chief executive officer", "chief executive", "directeur general", "director general",
        "pdg", "consejero delegado", "amministratore delegato", "fundador", "fundadora",
        "fondateur", "fondatrice", "grunder", "grunderin", "inhaber", "inhaberin",
        "propietario", "propietaria", "dueno", "duena", "vorstand", "vorstandsvorsitzender",
        "vorstandsvorsitzende",
    ),
    "GM / MD": (
        "managing director", "general manager", "gerente general", "geschaftsfuhrer",
        "geschaftsfuhrerin", "geschaftsleitung", "country manager", "general management",
    ),
    "Board Member": (
        "board", "board member", "board directors", "board director", "board trustees",
        "board governors", "board advisor", "advisory board", "trustee", "trustees",
        "chairman", "chairwoman", "chairperson", "chair", "vice chair", "vice chairman",
        "non-executive director", "independent director", "executive chairman",
        "member at large", "governor", "aufsichtsrat", "aufsichtsratsvorsitzender", "beirat",
        "consejero", "consejera",
    ),
    "Secretary": (
        "secretary", "secretaries", "executive assistant", "personal assistant",
        "administrative assistant", "admin assistant", "office assistant", "receptionist",
        "reception", "front desk", "typist", "stenographer", "sekretarin", "sekretar",
        "secretaire", "secretaria", "secretario", "secretary board", "chief executive assistant",
    ),
    "Merger/Acquisition": (
        "mergers and acquisitions", "M&A", "mergers", "merger", "acquisitions", "acquisition",
        "corporate development", "post merger integration",
    ),
    "Administration - Generic": (
        "administration", "administrative", "office manager", "office", "offices", "clerical",
        "data entry", "general affairs", "verwaltung", "administracion", "administrativo",
        "administrativa", "administratif", "amministrazione", "chief of staff",
        "document control", "document controller", "records management", "records",
        "mailroom", "office of the ceo", "office of the president",
    ),
    "Regulatory & Compliance": (
        "compliance", "regulatory", "regulatory affairs", "governance", "grc", "aml",
        "anti money laundering", "kyc", "privacy", "data privacy", "data protection", "dpo",
        "ethics", "policy", "public policy", "sanctions", "conformite", "cumplimiento",
        "trade compliance",
    ),
    "Legal": (
        "legal", "lawyer", "lawyers", "attorney", "attorneys", "counsel", "general counsel",
        "solicitor", "barrister", "paralegal", "paralegals", "litigation", "litigator",
        "intellectual property", "patent", "patents", "trademark", "trademarks", "notary",
        "juriste", "abogado", "abogada", "advogado", "advogada", "avocat", "avocate",
        "rechtsanwalt", "rechtsanwaltin", "anwalt", "jurist", "justiziar", "law", "contracts",
        "contract", "recht", "clo",
    ),
    "Accounting": (
        "accounting", "accountant", "accountants", "accounts", "accountancy", "bookkeeper",
        "bookkeeping", "accounts payable", "accounts receivable", "account payable",
        "account receivable", "billing", "invoicing", "payroll", "general ledger",
        "reconciliation", "reconciliations", "consolidation", "cpa", "acca",
        "revenue accountant", "revenue accounting", "technical accounting",
        "financial reporting", "buchhaltung", "buchhalter", "buchhalterin", "comptable",
        "comptabilite", "contador", "contadora", "contabilidad", "contable", "contabile",
    ),
    "Audit": (
        "audit", "audits", "auditor", "auditors", "auditing", "assurance", "internal control",
        "internal controls", "sox", "wirtschaftsprufer", "auditoria",
    ),
    "Corporate Tax": (
        "tax", "taxes", "taxation", "corporate tax", "indirect tax", "vat", "transfer pricing",
        "steuer", "steuern", "fiscalite", "impuestos", "tributario",
    ),
    "Inside Sales/Sales Development": (
        "inside sales", "sales development", "sales development representative",
        "business development representative", "telesales", "telemarketing",
        "lead generation", "appointment setter", "outbound",
    ),
    "Account Executive/Management": (
        "account", "account executive", "account manager", "account management",
        "key account", "key accounts", "strategic account", "strategic accounts",
        "national account", "national accounts", "global account", "global accounts",
        "enterprise account", "enterprise accounts", "major accounts", "named accounts",
        "account director", "account representative", "account owner", "partner account",
        "ejecutivo de cuentas", "cuentas",
    ),
    "Sales - Generic": (
        "sales", "salesperson", "salesman", "saleswoman", "seller", "sellers", "selling",
        "sales operations", "sales engineer", "sales engineering", "presales",
        "solutions engineer", "solutions consultant", "revenue", "commercial", "vendedor",
        "vendedora", "ventas", "vendas", "ventes", "vertrieb", "vertriebs", "verkauf",
        "verkaufs", "comercial", "commerciale", "revenue operations", "ad sales",
        "partner sales", "export sales", "field sales", "advertising sales",
    ),
    "Client/Customer Relationship/Engagement": (
        "customer", "customers", "client", "clients", "customer success", "client success",
        "customer relations", "client relations", "customer relationship",
        "client relationship", "relationship manager", "relationship management",
        "relationship", "relationships", "customer engagement", "client engagement",
        "engagement manager", "customer experience", "client experience",
        "customer retention", "renewals", "renewal", "client services", "client service",
        "client partner", "customer advocacy", "customer onboarding", "kunden", "kunde",
        "cliente", "clientes",
    ),
    "Regional/Territory": ("territory", "territories", "field sales"),
    "International/Global": ("global account", "global accounts", "export sales"),
    "Business Development/Partnership": (
        "business development", "business developer", "partnership", "partnerships",
        "alliance", "alliances", "channel", "channels", "channel partner", "channel partners",
        "partner manager", "partner management", "partner development", "partner success",
        "partner sales", "partner account", "partner programs", "partner program",
        "partner enablement", "partner operations", "partner relations",
        "partner solutions", "partner alliances", "partner marketing", "channel marketing",
        "strategic alliances", "strategic alliance", "strategic partnerships",
        "strategic partnership",
        "partners", "ecosystem", "new business", "fundraising", "fund development",
        "major gifts", "donor relations", "philanthropy", "grants", "desarrollo de negocio",
        "desarrollo de negocios", "developpement commercial", "geschaftsentwicklung",
    ),
    "Digital Marketing": (
        "digital", "digital marketing", "social media", "social", "growth marketing",
        "performance marketing", "paid media", "paid social", "email marketing", "email",
        "emailing", "influencer", "influencer marketing", "content marketing",
        "community manager", "user acquisition", "digital advertising",
    ),
    "Online Marketing": (
        "online marketing", "online", "seo", "sem", "ppc", "search engine optimization",
        "search engine marketing", "paid search", "search marketing", "web marketing",
        "emarketing", "affiliate", "affiliates", "affiliate marketing", "website", "websites",
        "webmaster", "web analytics", "conversion rate optimization",
    ),
    "Marketing - Generic": (
        "marketing", "marketer", "marketers", "mercadeo", "mercadotecnia",
        "marketing communications", "marcom", "marcomm", "growth", "content", "trade marketing",
        "shopper marketing", "field marketing", "partner marketing",
    ),
    "Campaign": (
        "campaign", "campaigns", "demand generation", "demand gen", "direct marketing",
        "direct mail", "lifecycle marketing", "lifecycle", "retention marketing",
        "acquisition marketing", "customer acquisition", "email marketing",
        "integrated marketing",
    ),
    "Events /Tradeshow": (
        "event", "events", "tradeshow", "tradeshows", "conference", "conferences",
        "exhibition", "exhibitions", "expo", "meeting planner", "meetings", "event planner",
        "wedding planner", "sponsorship", "sponsorships", "field marketing",
        "experiential marketing", "experiential",
    ),
    "Strategic Marketing": (
        "strategic marketing", "brand", "brands", "branding", "market research",
        "market intelligence", "competitive intelligence", "go to market",
        "marketing strategy", "positioning", "consumer insights", "customer insights",
        "market insights", "market development", "market access",
    ),
    "Product/Industry/Solutions Marketing": (
        "product marketing", "solutions marketing", "solution marketing",
        "industry marketing", "vertical marketing", "technical marketing",
        "portfolio marketing", "channel marketing", "partner marketing",
    ),
    "Marketing Operations": (
        "marketing operations", "marketing automation", "marketing technology", "martech",
        "marketing analytics", "marketing systems", "marketing technologist", "crm",
        "hubspot", "marketo", "pardot", "revenue operations",
    ),
    "Advertising": (
        "advertising", "advertisement", "ads", "ad", "adops", "ad sales", "ad operations",
        "ad trafficker", "media buyer", "media buying", "media planner", "media planning",
        "media strategist", "programmatic", "copywriter", "copywriting", "werbung",
        "publicidad", "publicite", "publicitario", "advertising sales",
    ),
    "IT Security": (
        "security", "information security", "infosec", "cybersecurity", "cyber",
        "IT security", "network security", "application security", "appsec",
        "cloud security", "security operations", "soc", "security engineer",
        "security analyst", "penetration tester", "pentester", "ethical hacker",
        "threat intelligence", "vulnerability", "identity and access management", "iam",
        "identity management", "chief security officer", "data security", "IT risk",
        "incident response", "security architect",
    ),
    "Network Management": (
        "network", "networks", "networking", "noc", "lan", "wan", "network administrator",
        "network operations", "cisco", "network security", "network architect",
    ),
    "Infrastructure": (
        "infrastructure", "cloud", "devops", "site reliability", "data center", "datacenter",
        "server", "servers", "systems engineer", "system engineer", "platform", "storage",
        "virtualization", "vmware", "aws", "azure", "gcp", "kubernetes", "linux", "unix",
        "mainframe", "cloud architect", "IT operations", "reliability engineering",
    ),
    "Information Systems": (
        "information systems", "management information systems", "mis",
        "information management", "business systems", "systems analyst", "system analyst",
        "sistemas", "sistemi", "systemes",
    ),
    "Telecommunications": (
        "telecommunications", "telecommunication", "telecom", "telecoms", "telco",
        "telephony", "voip", "unified communications", "wireless", "rf", "radio frequency",
        "fiber", "5g", "telekommunikation", "telecomunicaciones",
    ),
    "Help Desk/IT Support": (
        "helpdesk", "service desk", "IT support", "technical support", "tech support",
        "desktop support", "support technician", "IT technician", "computer technician",
        "end user support", "user support", "deskside support",
    ),
    "IT Admin": (
        "system administrator", "systems administrator", "systems administration",
        "IT administrator", "IT administration", "windows administrator",
        "network administrator", "administrateur systemes", "administrador de sistemas",
        "systemadministrator",
    ),
    "IT Systems /Desktop": (
        "desktop", "desktops", "desktop support", "desktop engineer", "end user computing",
        "end user services", "workplace technology", "systems", "system", "IT systems",
        "pc technician", "deskside support", "endpoint", "system owner",
    ),
    "Information Technology - Generic": (
        "information technology", "technology", "technologies", "chief information officer",
        "informatica", "informatique", "informatik", "edv", "ict", "tecnologia",
        "tecnologias", "technologie", "computer", "computers", "digital transformation",
    ),
    "IT Applications": (
        "application", "applications", "business applications", "enterprise applications",
        "application support", "application developer", "erp", "sap", "oracle", "salesforce",
        "servicenow", "workday", "netsuite", "sharepoint", "crm administrator",
        "crm developer", "hris",
    ),
    "Software Architecture / Technologist": (
        "software architect", "solutions architect", "solution architect",
        "enterprise architect", "technical architect", "systems architect",
        "system architect", "cloud architect", "data architect", "application architect",
        "integration architect", "IT architect", "security architect", "network architect",
        "software architecture", "enterprise architecture", "solution architecture",
        "technologist", "technologists", "chief architect",
    ),
    "DBA": (
        "database administrator", "database", "databases", "database engineer",
        "database developer", "database architect", "sql", "data architect", "data modeler",
        "data warehouse", "data warehousing", "etl", "nosql",
    ),
    "Engineering/Product Development": (
        "engineering", "software", "developer", "developers", "development", "programmer",
        "programmers", "programming", "coder", "product development", "software development",
        "fullstack", "frontend", "backend", "embedded", "embedded systems", "firmware",
        "mechanical", "electrical", "electronics", "civil", "structural", "chemical",
        "aerospace", "hardware", "mechatronics", "control systems", "robotics",
        "machine learning", "ml", "ai", "artificial intelligence", "data engineer",
        "data engineering", "mlops", "design engineer", "product engineer",
        "project engineer", "process engineer", "manufacturing engineer",
        "automation engineer", "automation", "dev", "entwickler", "entwicklerin",
        "entwicklung", "desarrollador", "desarrolladora", "developpeur", "developpeuse",
        "desenvolvedor", "sviluppatore", "ingenieria", "engenharia", "ingenierie",
        "application developer", "crm developer", "biomedical engineer",
        "chief technology officer", "chief technical officer", "reliability engineer",
        "site engineer", "sdet",
    ),
    "UX / UI Design": (
        "user experience", "user interface", "interaction design", "interaction designer",
        "product design", "product designer", "experience design", "experience designer",
        "usability", "user research", "user researcher", "service design", "service designer",
        "web designer", "information architect",
    ),
    "Technical": (
        "technical", "technique", "technik", "tecnico", "tecnica", "sales engineer",
        "sales engineering", "presales", "solutions engineer", "solutions consultant",
        "applications engineer", "application engineer", "field engineer",
        "support engineer", "technical consultant",
    ),
    "Architecture, Design & Planning": (
        "architect", "architects", "architecture", "architectural", "urban planner",
        "urban planning", "town planner", "city planner", "landscape architect",
        "landscape architecture", "cad", "drafter", "draftsman", "draughtsman", "bim",
        "space planner", "space planning", "interior architect", "project architect",
        "architecte", "arquitecto", "arquiteto", "architekt", "estimator", "estimating",
    ),
    "Research & Development": (
        "research", "research and development", "researcher", "researchers", "scientist",
        "scientists", "science", "scientific", "data scientist", "data science",
        "research scientist", "applied scientist", "machine learning", "ml", "ai",
        "artificial intelligence", "computer vision", "deep learning", "clinical research",
        "postdoctoral", "postdoc", "principal investigator", "forschung", "investigacion",
        "recherche", "chemist", "chemistry", "biologist", "biology", "physicist",
        "formulation", "epidemiologist", "pharmacologist", "geneticist",
    ),
    "Product Management": (
        "product", "products", "product manager", "product management", "product owner",
        "producto", "produit", "produkt", "chef de produit",
    ),
    "E-Commerce & Mobile": (
        "ecommerce", "ebusiness", "mobile", "ios", "android", "app", "apps", "marketplace",
        "marketplaces", "omnichannel", "online store", "webshop", "onlineshop",
        "digital commerce", "comercio electronico",
    ),
    "Design": (
        "creative", "graphic", "graphics", "graphic designer", "visual designer",
        "visual design", "art director", "art", "illustrator", "illustration", "animator",
        "animation", "motion designer", "motion graphics", "interior designer",
        "interior design", "fashion", "industrial designer", "industrial design",
        "brand designer", "disenador", "disenadora", "visual merchandiser",
    ),
    "Business Intelligence": (
        "business intelligence", "analytics", "data analyst", "data analytics", "data",
        "reporting", "insights", "insight", "business analyst", "business analysis",
        "tableau", "statistician", "statistics", "statistical", "decision science",
        "data visualization", "analytics engineer", "data governance", "big data",
        "master data", "data management", "data scientist", "data science",
        "marketing analytics", "web analytics", "operations research", "datos", "donnees",
        "data owner",
    ),
    "Risk/Fraud": (),
    "Planning": (
        "planning", "planner", "planners", "strategic planning", "demand planning",
        "demand planner", "capacity planning", "planificacion", "planung", "scheduler",
        "scheduling", "sop",
    ),
    "Quality Control/ Assurance": (
        "quality", "quality assurance", "quality control", "qhse", "tester", "testers",
        "testing", "test", "test automation", "sdet", "inspector", "inspectors",
        "inspection", "inspections", "six sigma", "lean six sigma", "continuous improvement",
        "qualitat", "qualite", "calidad", "qualidade", "qualita", "validation",
        "verification", "metrology", "quality controller",
    ),
    "Strategy": (
        "strategy", "strategic", "strategist", "corporate strategy", "business strategy",
        "transformation", "business transformation", "management consultant",
        "management consulting", "strategy consultant", "innovation", "sustainability",
        "esg", "strategic planning", "estrategia", "strategie", "digital transformation",
    ),
    "Operations - Generic": (
        "operations", "operation", "operating", "operational", "business operations",
        "operational excellence", "process improvement", "lean", "betrieb", "betriebs",
        "operaciones", "operacoes", "exploitation", "process owner", "service owner",
    ),
    "Loss Prevention/Protection": (
        "loss prevention", "asset protection", "security officer", "security guard",
        "guard", "guards", "physical security", "corporate security", "security supervisor",
        "store detective", "protection", "investigator", "investigations", "surveillance",
        "security services", "executive protection", "site security",
    ),
    "Customer Service/Support": (
        "customer service", "customer support", "customer care", "call center",
        "contact center", "customer operations", "kundendienst", "kundenservice",
        "atencion al cliente", "service client", "servicio al cliente", "product support",
        "member services", "guest services", "guest relations", "concierge",
        "service advisor", "complaints", "escalations", "support engineer",
        "customer service representative",
    ),
    "Merchandise Management": (
        "merchandising", "merchandise", "merchandiser", "merchandisers", "merchant",
        "merchants", "visual merchandiser", "visual merchandising", "assortment",
        "planogram", "retail buyer", "fashion buyer", "merchandise buyer",
    ),
    "Health/Safety": (
        "safety", "health and safety", "hse", "ehs", "hsse", "qhse", "occupational health",
        "environmental health", "environment health and safety", "osha", "environmental",
        "environment", "fire protection", "fire safety", "industrial hygiene",
        "industrial hygienist", "ergonomics",
    ),
    "Production": (
        "production", "manufacturing", "fabrication", "fabricator", "assembly", "assembler",
        "machinist", "process engineer", "manufacturing engineer", "welder", "welding",
        "cnc", "packaging", "brewer", "brewmaster", "line leader", "produktion",
        "produccion", "producao", "fertigung", "fabricacion",
    ),
    "Maintenance": (
        "maintenance", "mechanic", "mechanics", "repair", "repairs", "hvac", "electrician",
        "electricians", "plumber", "field service", "field technician", "service technician",
        "instandhaltung", "mantenimiento", "manutencao", "reliability", "reliability engineer",
        "millwright",
    ),
    "Business Continuity": (
        "business continuity", "continuity", "disaster recovery", "crisis management",
        "emergency management", "emergency preparedness", "resilience",
        "operational resilience", "bcp",
    ),
    "Project / Program Management": (
        "project", "projects", "program", "programs", "pmo", "project manager",
        "program manager", "delivery manager", "delivery lead", "delivery director",
        "service delivery", "project delivery", "program delivery", "scrum", "scrum master",
        "agile", "agile coach", "implementation", "implementations", "professional services",
        "projekt", "proyecto", "proyectos", "projet", "projets", "progetto", "chef de projet",
        "project engineer", "management office",
    ),
    "Purchasing/Procurement": (
        "purchasing", "procurement", "purchaser", "buyer", "buyers", "sourcing",
        "strategic sourcing", "vendor management", "vendor manager", "supplier", "suppliers",
        "supplier management", "einkauf", "einkaufs", "einkaufer", "compras", "comprador",
        "compradora", "achats", "acheteur", "acheteuse", "acquisti", "category buyer",
    ),
    "Category/Commodity": (
        "category", "categories", "category manager", "category management", "commodity",
        "commodities", "category buyer",
    ),
    "Supply chain - Generic": (
        "supply chain", "supply", "supply chain management", "demand planning",
        "demand planner", "materials management", "materials", "material", "sop",
        "lieferkette", "cadena de suministro",
    ),
    "Inventory": (
        "inventory", "inventories", "stock", "stock controller", "stock control",
        "inventory control", "inventory controller", "replenishment", "allocation",
        "allocations", "inventario",
    ),
    "Logistics": (
        "logistics", "logistic", "logistik", "logistica", "logistique", "transportation",
        "transport", "shipping", "freight", "fleet", "distribution", "dispatch",
        "dispatcher", "trucking", "driver", "drivers", "delivery driver", "traffic manager",
        "traffic coordinator", "routing", "courier", "freight forwarder",
        "freight forwarding", "3pl", "freight broker", "air traffic controller",
    ),
    "Warehouse": (
        "warehouse", "warehousing", "distribution center", "fulfillment",
        "fulfillment center", "forklift", "picker", "packer", "order picker", "receiving",
        "lager", "almacen", "entrepot", "magazzino", "stockroom", "material handler",
        "materials handler",
    ),
    "Import/Export": (
        "import", "imports", "export", "exports", "importer", "exporter", "customs",
        "customs broker", "trade compliance", "foreign trade", "international trade",
        "freight forwarder", "freight forwarding", "comercio exterior", "zoll",
        "export sales",
    ),
    "Facilities/Branch": (
        "facility", "facilities", "facilities management", "facility manager", "branch",
        "branches", "building", "buildings", "janitor", "janitorial", "custodian",
        "custodial", "groundskeeper", "housekeeping", "office services", "workplace",
        "site manager", "filiale", "filial", "sucursal", "agence", "niederlassung",
        "hausmeister",
    ),
    "Real Estate/Property": (
        "real estate", "realtor", "realty", "property", "properties", "property manager",
        "leasing", "estate agent", "letting agent", "lettings", "broker", "landlord",
        "immobilien", "inmobiliaria", "inmobiliario", "immobilier", "imobiliaria",
        "commercial real estate", "appraiser", "appraisal",
    ),
    "Plant": (
        "plant", "plants", "mill", "refinery", "power plant", "werk", "usine", "planta",
        "fabrica", "factory", "fabrik",
    ),
    "Culinary": (
        "chef", "chefs", "cook", "cooks", "culinary", "kitchen", "food and beverage",
        "F&B", "catering", "caterer", "restaurant", "restaurants", "pastry", "baker",
        "bakery", "bartender", "barista", "sommelier", "dining", "food service",
        "foodservice", "food", "cocinero", "cocinera", "cuisinier", "cuisiniere", "cuisine",
        "koch", "kuchen", "kuchenchef",
    ),
    "Store": (
        "store", "stores", "shop", "shops", "retail store", "boutique", "cashier", "cashiers",
        "retail", "supermarket", "sales floor", "tienda", "magasin", "markt",
        "department store",
    ),
    "Trade and Portfolio": (
        "trader", "traders", "trading", "portfolio", "portfolios", "portfolio manager",
        "portfolio management", "fund manager", "asset management", "asset manager",
        "equity research", "equities", "equity", "fixed income", "derivatives",
        "securities", "capital markets", "hedge fund", "stock broker", "stockbroker",
        "quant", "quantitative", "quantitative analyst", "sales and trading",
        "commodity trader", "commodities trader", "market maker",
    ),
    "Financial Planning & Investment": (
        "financial planning", "financial planner", "financial advisor", "financial consultant",
        "wealth management", "wealth manager", "wealth advisor", "wealth", "investment",
        "investments", "investor", "investors", "investing", "investor relations",
        "private equity", "venture capital", "venture partner", "retirement", "pension",
        "pensions", "fiduciary", "estate planning", "financial planning and analysis",
        "investment banking", "investment banker", "private banking", "private wealth",
        "family office", "endowment",
    ),
    "Finance": (
        "finance", "financial", "financials", "corporate finance", "chief financial officer",
        "finanzen", "finanz", "finanzas", "financiero", "financiera", "financeiro",
        "financeira", "finances", "financier", "budget", "budgeting", "cost", "costing",
        "pricing", "fiscal", "daf", "finops", "financial planning and analysis",
    ),
    "Controller": (
        "controller", "controllers", "comptroller", "controlling", "financial controller",
        "financial control", "controleur", "contralor",
    ),
    "Cash Management": (
        "treasury", "treasurer", "cash management", "cash", "credit control",
        "credit controller", "collections", "collector", "liquidity", "working capital",
        "payments", "payment", "tresorerie", "tesoreria", "tesorero", "liquidity risk",
    ),
    "Risk & Fraud": (
        "credit risk", "market risk", "financial risk", "liquidity risk", "financial crime",
        "financial crimes", "counter fraud",
    ),
    "Banking": (
        "bank", "banks", "banking", "banker", "bankers", "teller", "tellers", "loan", "loans",
        "lending", "lender", "mortgage", "mortgages", "credit", "commercial banking",
        "retail banking", "private banking", "investment banking", "investment banker",
        "relationship banker", "personal banker", "mortgage broker", "banque", "banca",
        "banco", "bancario", "kredit", "credito",
    ),
    "Insurance": (
        "insurance", "insurer", "reinsurance", "underwriter", "underwriters", "underwriting",
        "claims", "claim", "claims adjuster", "adjuster", "adjusters", "actuary", "actuaries",
        "actuarial", "insurance broker", "versicherung", "versicherungen", "seguros",
        "seguro", "assurances", "loss control",
    ),
    "Human Resources": (
        "human resources", "human resource", "people operations", "HR operations",
        "people and culture", "people", "personnel", "personal", "talent", "talent acquisition",
        "talent management", "recruiter", "recruiters", "recruiting", "recruitment",
        "recruit", "sourcer", "talent sourcer", "technical recruiter", "talent sourcing",
        "headhunter", "staffing",
        "benefits", "compensation", "rewards", "total rewards", "payroll",
        "employee relations", "labor relations", "industrial relations", "employee experience",
        "employee engagement", "employer branding", "workforce", "hris", "culture",
        "diversity", "inclusion", "dei", "onboarding", "recursos humanos",
        "ressources humaines", "rrhh", "rh", "drh", "personalwesen", "people partner",
        "resourcing", "global mobility", "personalentwicklung",
    ),
    "Training & Development": (
        "training", "trainer", "trainers", "learning and development", "learning",
        "training and development", "organizational development", "talent development",
        "leadership development", "people development", "professional development",
        "staff development", "coach", "coaches", "coaching", "instructional design",
        "instructional designer", "enablement", "elearning", "formation", "formateur",
        "formatrice", "capacitacion", "capacitador", "ausbildung", "weiterbildung",
        "personalentwicklung",
    ),
    "Communications": (
        "communications", "communication", "comms", "internal communications",
        "corporate communications", "marketing communications", "marcom", "marcomm",
        "corporate affairs", "government relations", "government affairs", "lobbyist",
        "lobbying", "writer", "writers", "speechwriter", "investor relations",
        "spokesperson", "kommunikation", "comunicacion", "comunicaciones", "comunicacao",
        "translator", "translation", "interpreter", "community relations",
        "stakeholder relations", "stakeholder engagement", "external affairs",
        "external relations", "grant writer",
    ),
    "Media & PR": (
        "public relations", "press", "press officer", "media relations", "media", "publicist",
        "journalist", "journalism", "reporter", "correspondent", "editor", "editors",
        "editorial", "editor in chief", "producer", "producers", "executive producer",
        "broadcast", "broadcasting", "video", "videographer", "video editor",
        "video production", "photographer", "photography", "content creator", "podcast",
        "presse", "prensa", "relaciones publicas", "relations presse", "relations publiques",
        "news", "public affairs",
    ),
    "Wellness": (
        "wellness", "wellbeing", "fitness", "personal trainer", "yoga", "pilates", "nutrition",
        "nutritionist", "dietitian", "dietician", "massage", "massage therapist",
        "health coach", "wellness coach", "life coach", "fitness instructor",
        "yoga instructor", "spa", "esthetician",
    ),
    "Specialist": (
        "cardiologist", "oncologist", "radiologist", "dermatologist", "neurologist",
        "urologist", "gastroenterologist", "endocrinologist", "nephrologist", "pulmonologist",
        "rheumatologist", "hematologist", "ophthalmologist", "anesthesiologist",
        "anesthetist", "psychiatrist", "psychologist", "surgeon", "surgeons", "orthodontist",
        "periodontist", "endodontist", "audiologist", "optometrist", "podiatrist",
        "chiropractor", "speech pathologist", "speech therapist", "obstetrician",
        "gynecologist", "obgyn", "allergist", "immunologist", "medical specialist",
        "clinical specialist",
    ),
    "Pharmacist": (
        "pharmacist", "pharmacists", "pharmacy", "pharmacie", "pharmacien", "pharmacienne",
        "farmacia", "farmaceutico", "farmaceutica", "apotheker", "apothekerin", "apotheke",
        "pharmd", "dispensary",
    ),
    "Patient Care": (
        "nurse", "nurses", "nursing", "registered nurse", "lpn", "lvn", "cna",
        "nursing assistant", "patient care", "patient", "patients", "caregiver", "carer",
        "care coordinator", "case manager", "case management", "physical therapist",
        "physiotherapist", "physiotherapy", "physical therapy", "occupational therapist",
        "occupational therapy", "respiratory therapist", "therapist", "therapists",
        "therapy", "paramedic", "emt", "medical assistant", "midwife", "home health",
        "hospice", "social worker", "doula", "enfermera", "enfermero", "enfermeria",
        "infirmier", "infirmiere", "krankenschwester", "pflege", "pflegekraft",
        "patient access", "patient experience", "hygienist", "dental hygienist",
        "dental assistant", "clinician", "clinicians", "counselor", "nurse practitioner",
    ),
    "Laboratory": (
        "laboratory", "laboratories", "lab", "labs", "medical technologist",
        "medical laboratory", "phlebotomist", "phlebotomy", "histotechnologist", "histology",
        "cytotechnologist", "cytology", "pathologist", "pathology", "microbiologist",
        "microbiology", "clinical laboratory", "laborant", "laboratorio", "lab technologist",
    ),
    "Medical - Generic": (
        "medical", "medicine", "clinical", "healthcare", "health", "hospital", "hospitals",
        "clinic", "clinics", "medical director", "medical affairs", "medical science liaison",
        "msl", "chief medical officer", "radiology", "radiographer", "sonographer",
        "ultrasound", "practice manager", "dental", "medical device", "medical devices",
        "biomedical", "biomedical engineer", "clinical research", "veterinary", "vet tech",
        "vet technician",
        "radiologic technologist", "salud", "sante", "gesundheit", "medizinisch",
    ),
    "Doctor": (
        "doctor", "doctors", "physician", "physicians", "medical doctor", "surgeon",
        "surgeons", "general practitioner", "hospitalist", "pediatrician", "dentist",
        "dentists", "veterinarian", "chief medical officer", "medical director", "medico",
        "medica", "arzt", "arztin", "oberarzt", "chefarzt", "medecin", "doctora",
        "family medicine", "internist", "emergency medicine",
    ),
    "Education / Teaching": (
        "teacher", "teachers", "teaching", "professor", "professors", "lecturer",
        "lecturers", "instructor", "instructors", "tutor", "tutors", "educator", "educators",
        "education", "educational", "school", "schools", "faculty", "academic", "academics",
        "head teacher", "headteacher", "headmaster", "headmistress", "curriculum",
        "department chair", "provost", "chancellor", "university", "college", "kindergarten",
        "preschool", "librarian", "library", "professeur", "profesor", "profesora",
        "professora", "lehrer", "lehrerin", "docente", "enseignant", "enseignante",
        "maestro", "maestra", "school principal", "vice principal", "assistant principal",
        "admissions", "registrar", "student affairs", "student services", "dean",
    ),
    "Top Management": (),
    _REGION: ("regional", "region", "regions", "area", "district", "zone", "country"),
    _GLOBAL: (
        "international", "global", "worldwide", "emea", "apac", "americas", "latam",
        "north america", "europe", "asia", "asia pacific", "export",
    ),
    _RISK: (
        "risk", "risks", "fraud", "risk management", "enterprise risk", "anti fraud",
        "fraud prevention", "operational risk", "risque", "riesgo", "riesgos",
        "IT risk", "financial crime", "financial crimes", "counter fraud", "credit risk",
        "market risk", "financial risk",
    ),
}
# Count only when nothing stronger names a function ("Network Engineer" is not Engineering).
_WEAK_FUNCTIONS: dict[str, tuple[str, ...]] = {
    "Engineering/Product Development": (
        "engineer", "engineers", "ingeniero", "ingeniera", "ingenieur", "ingenieurin",
        "engenheiro", "engenheira", "ingegnere",
    ),
    "Administration - Generic": (
        "administrator", "administrators", "assistant", "assistants", "assistente",
        "asistente", "assistent", "assistentin", "coordinator", "coordinators", "coordinador",
        "coordinadora", "coordinateur", "coordinatrice", "clerk", "clerks", "sachbearbeiter",
        "sachbearbeiterin",
    ),
    "Technical": ("technician", "technicians", "tech", "techniker"),
    "Customer Service/Support": ("support", "service", "services", "agent", "agents"),
    "Sales - Generic": ("representative", "representatives"),
    "Business Intelligence": ("analyst", "analysts"),
    "Associate": ("associate", "associates"),
    "Strategy": ("consulting", "advisory"),
    "Design": ("design", "designer", "designers", "diseno"),
    "Production": ("operator", "operators", "shift"),
    "Patient Care": ("care",),
    "Education / Teaching": ("student", "students"),
}
# Phrases that only keep a word inside them from matching ("vice president" is no president).
_NEUTRAL_FUNCTION_PHRASES = (
    "vice president", "vice presidente", "business partner", "assistant manager",
    "chef d'equipe", "chef de service", "head hunter", "board certified",
)
# fmt: on
# Levels that imply a Top Management sub-function of their own.
_LEVEL_LABELS = {CXO: "Top Management", BOARD: "Board Member", MD: "GM / MD"}


# --- matching ------------------------------------------------------------------------------

V = TypeVar("V")
# fmt: off
_COMPOUND_SUFFIXES = (
    "leiterin", "leiter", "direktorin", "direktor", "managerin", "manager", "ingenieurin",
    "ingenieur", "entwicklerin", "entwickler", "beraterin", "berater", "referentin",
    "referent", "assistentin", "assistent", "spezialistin", "spezialist", "koordinatorin",
    "koordinator", "administrator", "techniker", "arzt", "chef",
)
# fmt: on
_COMPOUND = re.compile(rf"(\w{{3,}}?)(s?)({'|'.join(_COMPOUND_SUFFIXES)})")


@dataclass(frozen=True)
class _PhraseTable(Generic[V]):
    """Phrases (normalized, space-joined) to values, with the longest phrase per first word."""

    entries: Mapping[str, V]
    longest: Mapping[str, int]

    @classmethod
    def of(cls, entries: dict[str, V]) -> _PhraseTable[V]:
        longest: dict[str, int] = {}
        for phrase in entries:
            words = phrase.split()
            longest[words[0]] = max(longest.get(words[0], 0), len(words))
        return cls(entries, longest)

    def match(self, tokens: list[str]) -> list[tuple[int, V]]:
        """(position, value) of the phrases found, longest first, scanning left to right."""
        hits: list[tuple[int, V]] = []
        i = 0
        while i < len(tokens):
            size, hit = self._longest_at(tokens, i)
            if hit is None:
                hits.extend((i, part) for part in self._compound(tokens[i]))
                i += 1
            else:
                hits.append((i, hit))
                i += size
        return hits

    def _longest_at(self, tokens: list[str], i: int) -> tuple[int, V | None]:
        for size in range(min(self.longest.get(tokens[i], 0), len(tokens) - i), 0, -1):
            hit = self.entries.get(" ".join(tokens[i : i + size]))
            if hit is not None:
                return size, hit
        return 0, None

    def _compound(self, token: str) -> Iterable[V]:
        """German compounds: "vertriebsleiter" counts as "vertrieb" + "leiter"."""
        if len(token) < 8 or not token.endswith(_COMPOUND_SUFFIXES):
            return ()
        found = _COMPOUND.fullmatch(token)
        if found is None:
            return ()
        stem, link, suffix = found.groups()
        parts = (self.entries.get(stem + link) or self.entries.get(stem), self.entries.get(suffix))
        return [hit for hit in parts if hit is not None]


def _phrase_keys(phrases: Iterable[str]) -> Iterable[str]:
    for phrase in phrases:
        key = normalize_title(phrase)
        if not key:
            raise ValueError(f"title rule {phrase!r} normalizes to nothing")
        yield key


def _level_table() -> _PhraseTable[tuple[str, str]]:
    entries: dict[str, tuple[str, str]] = {}
    kinds = (("strong", _STRONG_LEVELS), ("weak", _WEAK_LEVELS), ("leading", _LEADING_LEVELS))
    for kind, groups in kinds:
        for level, phrases in groups.items():
            for key in _phrase_keys(phrases):
                if entries.setdefault(key, (level, kind)) != (level, kind):
                    raise ValueError(f"title rule {key!r} has two levels")
    return _PhraseTable.of(entries)


def _function_table() -> _PhraseTable[tuple[frozenset[str], bool]]:
    entries: dict[str, tuple[frozenset[str], bool]] = {}
    for weak, groups in ((False, _STRONG_FUNCTIONS), (True, _WEAK_FUNCTIONS)):
        for label, phrases in groups.items():
            if label not in _FUNCTION_OF and not label.startswith("@"):
                raise ValueError(f"{label!r} is not in the taxonomy")
            for key in _phrase_keys(phrases):
                labels, was_weak = entries.get(key, (frozenset(), weak))
                if was_weak != weak:
                    raise ValueError(f"title rule {key!r} is both weak and strong")
                entries[key] = (labels | {label}, weak)
    for key in _phrase_keys(_NEUTRAL_FUNCTION_PHRASES):
        entries.setdefault(key, (frozenset(), False))
    return _PhraseTable.of(entries)


_FUNCTION_OF: dict[str, str] = {fn: fn for fn in FUNCTIONS} | {
    sub: fn for fn, subs in FUNCTIONS.items() for sub in subs
}
_LEVEL_RANK = {level: rank for rank, level in enumerate(LEVELS)}
_FUNCTION_RANK = {fn: rank for rank, fn in enumerate(FUNCTIONS)}
_SUB_RANK = {sub: rank for rank, sub in enumerate(s for subs in FUNCTIONS.values() for s in subs)}
_LEVEL_TABLE = _level_table()
_FUNCTION_TABLE = _function_table()
_SERVING = frozenset({"assistant", "secretary", "advisor", "aide", "reporting", "assistente"})
_EMPTY = TitleClass((), (), ())


# --- classification ------------------------------------------------------------------------


def _title_tokens(normalized: str) -> list[str]:
    """Words that describe the role: drop "at <company>" and the boss in "assistant to X"."""
    tokens = normalized.split()
    for i, token in enumerate(tokens):
        if i and token == "at" and tokens[i + 1 : i + 2] != ["large"]:
            return tokens[:i]
        if i and token == "to" and tokens[i - 1] in _SERVING:
            return tokens[:i]
    return tokens


def _levels(tokens: list[str]) -> tuple[str, ...]:
    """One level, most senior strong one; Board Members/Trustee may come on top of it."""
    strong: set[str] = set()
    weak: set[str] = set()
    for start, (level, kind) in _LEVEL_TABLE.match(tokens):
        if kind != "leading" or start == 0:
            (strong if kind == "strong" else weak).add(level)
    if not strong:
        return (min(weak, key=_LEVEL_RANK.__getitem__),) if weak else (BELOW,)
    top = [min(strong - {BOARD}, key=_LEVEL_RANK.__getitem__)] if strong - {BOARD} else []
    board = [BOARD] if BOARD in strong else []
    return tuple(sorted(top + board, key=_LEVEL_RANK.__getitem__))


def _labels(tokens: list[str]) -> set[str]:
    """Sub-functions, function names and modifiers the title's words point at."""
    strong: set[str] = set()
    weak: set[str] = set()
    for _, (labels, is_weak) in _FUNCTION_TABLE.match(tokens):
        (weak if is_weak else strong).update(labels)
    if strong - {_REGION, _GLOBAL}:
        return strong
    return strong | weak


def _resolve_modifiers(labels: set[str]) -> set[str]:
    """Turn region and risk modifiers into sub-functions fitting the rest of the title."""
    found = {label for label in labels if not label.startswith("@")}
    functions = {_FUNCTION_OF[label] for label in found}
    if _RISK in labels:
        found.add("Risk & Fraud" if "Finance/Banking/Insurance" in functions else "Risk/Fraud")
    if "Sales" in functions:
        found |= {"Regional/Territory"} if _REGION in labels else set()
        found |= {"International/Global"} if _GLOBAL in labels else set()
    elif not functions and labels & {_REGION, _GLOBAL}:
        found.add("International / Regional")
    return found or {"Miscellaneous"}


def _functions(tokens: list[str], levels: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    """Functions and sub-functions, each in taxonomy order."""
    labels = _labels(tokens) | {_LEVEL_LABELS[lvl] for lvl in levels if lvl in _LEVEL_LABELS}
    labels = _resolve_modifiers(labels)
    functions = sorted({_FUNCTION_OF[label] for label in labels}, key=_FUNCTION_RANK.get)
    subs = sorted((label for label in labels if label in _SUB_RANK), key=_SUB_RANK.get)
    return tuple(functions), tuple(subs)


@lru_cache(maxsize=65_536)
def classify(title: str) -> TitleClass:
    """Levels, functions and sub-functions of a free-text job title; never raises.

    A non-empty title always gets one level (two when a board seat comes with it) and at
    least one function; an empty or punctuation-only title gets empty tuples.
    """
    if not isinstance(title, str):
        return _EMPTY
    tokens = _title_tokens(normalize_title(title))
    if not tokens:
        return _EMPTY
    levels = _levels(tokens)
    functions, subs = _functions(tokens, levels)
    return TitleClass(levels, functions, subs)


# --- naming the taxonomy in a filter ---------------------------------------------------------

# fmt: off
_LEVEL_NAMES: dict[str, tuple[str, ...]] = {
    CXO: ("Founder/CXO", "founder", "founders", "cxo", "c-level", "c level", "c-suite",
          "c suite", "chief"),
    BOARD: ("Board Members/Trustee", "board", "board member", "board members", "trustee",
            "trustees"),
    VP: ("VP", "VPs", "SVP", "EVP", "AVP", "vice presidents"),
    MD: ("MD", "managing directors"),
    DIRECTOR: ("director", "directors"),
    HEAD: ("head", "heads"),
    MANAGER: ("manager", "managers"),
    STAFF: ("Staff/Principal", "staff", "principal"),
    BELOW: ("Below Manager", "individual contributor", "individual contributors"),
}
_FUNCTION_NAMES: dict[str, tuple[str, ...]] = {
    "Top Management": ("top management",),
    "Administration": ("admin",),
    "Legal /Regulatory & Compliance": ("legal", "regulatory", "compliance"),
    "Accounting and related": ("accounting",),
    "Sales": ("sales",),
    "Marketing": ("marketing",),
    "Information Technology": ("IT",),
    "Engineering and Development": ("engineering", "development", "R&D"),
    "Miscellaneous": (),
    "Operations and related": ("operations", "ops"),
    "Supply Chain Management": ("supply chain",),
    "Facility Operations": ("facilities", "facility"),
    "Finance/Banking/Insurance": ("finance", "banking", "insurance"),
    "Human Resources and related": ("HR", "human resources", "people"),
    "Communications/Public Relations": ("communications", "public relations", "PR"),
    "Medical & Wellness": ("medical", "wellness"),
    "Education / Teaching": ("education", "teaching"),
}
# fmt: on


@dataclass(frozen=True)
class TaxonomyTerms:
    """The levels and functions a filter names; an empty set leaves that side open."""

    levels: frozenset[str]
    functions: frozenset[str]


def _taxonomy_vocabulary() -> dict[str, tuple[str, str]]:
    """Normalized phrase -> ("level" or "function", taxonomy value); the value's own name too."""
    vocabulary: dict[str, tuple[str, str]] = {}
    for kind, named in (("level", _LEVEL_NAMES), ("function", _FUNCTION_NAMES)):
        for value, phrases in named.items():
            for key in _phrase_keys((value, *phrases)):
                vocabulary[key] = (kind, value)
    return vocabulary


_TAXONOMY_WORDS = _taxonomy_vocabulary()
_TAXONOMY_LONGEST = max(len(phrase.split()) for phrase in _TAXONOMY_WORDS)


@lru_cache(maxsize=1024)
def taxonomy_terms(text: str) -> TaxonomyTerms | None:
    """The levels and functions `text` names when it is nothing but their names ("VP",
    "Marketing", "Director of Sales", "VP Sales and Marketing"); None for any other text."""
    words = normalize_title(text).split()
    found: dict[str, set[str]] = {"level": set(), "function": set()}
    i = 0
    while i < len(words):
        for size in range(min(_TAXONOMY_LONGEST, len(words) - i), 0, -1):
            hit = _TAXONOMY_WORDS.get(" ".join(words[i : i + size]))
            if hit is not None:
                found[hit[0]].add(hit[1])
                i += size
                break
        else:
            return None
    if not words:
        return None
    return TaxonomyTerms(frozenset(found["level"]), frozenset(found["function"]))
