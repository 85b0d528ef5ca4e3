"""Tests for server.titles: job titles to taxonomy levels, functions and sub-functions."""

import random

import pytest

from server.titles import FUNCTIONS, LEVELS, TitleClass, classify, normalize_title, taxonomy_terms

CXO, BOARD, VP, MD, DIRECTOR, HEAD, MANAGER, STAFF, BELOW = LEVELS

TOP = "Top Management"
ADMIN = "Administration"
LEGAL = "Legal /Regulatory & Compliance"
ACCT = "Accounting and related"
SALES = "Sales"
MKTG = "Marketing"
IT = "Information Technology"
ENG = "Engineering and Development"
MISC = "Miscellaneous"
OPS = "Operations and related"
SCM = "Supply Chain Management"
FAC = "Facility Operations"
FIN = "Finance/Banking/Insurance"
HR = "Human Resources and related"
COMMS = "Communications/Public Relations"
MED = "Medical & Wellness"
EDU = "Education / Teaching"

# The examples taxonomy.md says the classifier must get right.
TAXONOMY_EXAMPLES = [
    ("VP Sales", (VP,), (SALES,)),
    ("Vice President of Sales", (VP,), (SALES,)),
    ("Sr. Software Engineer", (STAFF,), (ENG,)),
    ("CTO", (CXO,), (TOP, ENG)),
    ("Head of Marketing Ops", (HEAD,), (MKTG,)),
    ("Chief People Officer", (CXO,), (HR,)),
    ("Account Executive", (BELOW,), (SALES,)),
]

# (title, exact levels, functions that must be present, sub-function that must be present)
TITLES: list[tuple[str, tuple[str, ...], tuple[str, ...], str | None]] = [
    # Top management, board, managing directors
    ("CEO", (CXO,), (TOP,), "Founder & CEO"),
    ("Chief Executive Officer", (CXO,), (TOP,), "Founder & CEO"),
    ("Founder & CEO", (CXO,), (TOP,), "Founder & CEO"),
    ("CEO & Co-Founder", (CXO,), (TOP,), "Founder & CEO"),
    ("Co-Founder", (CXO,), (TOP,), "Founder & CEO"),
    ("Owner", (CXO,), (TOP,), "Founder & CEO"),
    ("Owner / Operator", (CXO,), (TOP,), "Founder & CEO"),
    ("President", (CXO,), (TOP,), "Founder & CEO"),
    ("President & CEO", (CXO,), (TOP,), "Founder & CEO"),
    ("Managing Partner", (CXO,), (TOP,), "Founder & CEO"),
    ("Partner", (CXO,), (TOP,), None),
    ("Partner, Audit & Assurance", (CXO,), (TOP, ACCT), "Audit"),
    ("Senior Partner", (CXO,), (TOP,), None),
    ("Chairman & CEO", (CXO, BOARD), (TOP,), "Board Member"),
    ("Chairman of the Board", (BOARD,), (TOP,), "Board Member"),
    ("Board Member", (BOARD,), (TOP,), "Board Member"),
    ("Member of the Board of Directors", (BOARD,), (TOP,), "Board Member"),
    ("Non-Executive Director", (BOARD,), (TOP,), "Board Member"),
    ("Independent Director", (BOARD,), (TOP,), "Board Member"),
    ("Trustee", (BOARD,), (TOP,), "Board Member"),
    ("Vice Chairman", (BOARD,), (TOP,), "Board Member"),
    ("Advisory Board Member", (BOARD,), (TOP,), "Board Member"),
    ("Managing Director", (MD,), (TOP,), "GM / MD"),
    ("MD, Investment Banking", (MD,), (TOP, FIN), "Banking"),
    ("General Manager", (MD,), (TOP,), "GM / MD"),
    ("GM", (MD,), (TOP,), "GM / MD"),
    ("Hotel General Manager", (MD,), (TOP,), "GM / MD"),
    ("Country Manager, Germany", (MD,), (TOP,), "GM / MD"),
    ("SVP & GM", (VP,), (TOP,), "GM / MD"),
    ("EVP & CFO", (CXO,), (TOP, FIN), "Finance"),
    ("Founder/CTO", (CXO,), (TOP, ENG), "Founder & CEO"),
    ("Geschäftsführer", (MD,), (TOP,), "GM / MD"),
    ("Geschäftsführerin Vertrieb", (MD,), (TOP, SALES), "GM / MD"),
    ("Directeur Général", (CXO,), (TOP,), "Founder & CEO"),
    ("PDG", (CXO,), (TOP,), "Founder & CEO"),
    ("Gerente General", (MD,), (TOP,), "GM / MD"),
    ("Fundador y CEO", (CXO,), (TOP,), "Founder & CEO"),
    ("Inhaber", (CXO,), (TOP,), "Founder & CEO"),
    ("Chief of Staff", (DIRECTOR,), (ADMIN,), "Administration - Generic"),
    # Sales
    ("SVP, Global Sales", (VP,), (SALES,), "International/Global"),
    ("EVP Sales & Marketing", (VP,), (SALES, MKTG), "Sales - Generic"),
    ("Senior Vice President of Sales", (VP,), (SALES,), "Sales - Generic"),
    ("Regional Sales Manager", (MANAGER,), (SALES,), "Regional/Territory"),
    ("Area Sales Manager", (MANAGER,), (SALES,), "Regional/Territory"),
    ("Territory Manager", (MANAGER,), (SALES,), "Regional/Territory"),
    ("Field Sales Representative", (BELOW,), (SALES,), "Regional/Territory"),
    ("International Sales Manager", (MANAGER,), (SALES,), "International/Global"),
    ("Export Sales Manager", (MANAGER,), (SALES,), "International/Global"),
    ("Inside Sales Representative", (BELOW,), (SALES,), "Inside Sales/Sales Development"),
    ("SDR", (BELOW,), (SALES,), "Inside Sales/Sales Development"),
    ("BDR", (BELOW,), (SALES,), "Inside Sales/Sales Development"),
    ("Sales Development Manager", (MANAGER,), (SALES,), "Inside Sales/Sales Development"),
    ("Telesales Executive", (BELOW,), (SALES,), "Inside Sales/Sales Development"),
    ("Sr. Account Executive", (STAFF,), (SALES,), "Account Executive/Management"),
    ("Enterprise Account Executive", (BELOW,), (SALES,), "Account Executive/Management"),
    ("Key Account Manager", (MANAGER,), (SALES,), "Account Executive/Management"),
    ("KAM", (MANAGER,), (SALES,), "Account Executive/Management"),
    ("National Accounts Manager", (MANAGER,), (SALES,), "Account Executive/Management"),
    ("Global Account Director", (DIRECTOR,), (SALES,), "International/Global"),
    ("Ejecutivo de Cuentas", (BELOW,), (SALES,), "Account Executive/Management"),
    ("Customer Success Manager", (MANAGER,), (SALES,), "Client/Customer Relationship/Engagement"),
    ("CSM", (MANAGER,), (SALES,), "Client/Customer Relationship/Engagement"),
    (
        "Client Relationship Manager",
        (MANAGER,),
        (SALES,),
        "Client/Customer Relationship/Engagement",
    ),
    ("Renewals Specialist", (BELOW,), (SALES,), "Client/Customer Relationship/Engagement"),
    ("Director of Business Development", (DIRECTOR,), (SALES,), "Business Development/Partnership"),
    ("Biz Dev Manager", (MANAGER,), (SALES,), "Business Development/Partnership"),
    ("BD Manager", (MANAGER,), (SALES,), "Business Development/Partnership"),
    ("Head of Partnerships", (HEAD,), (SALES,), "Business Development/Partnership"),
    ("Channel Sales Manager", (MANAGER,), (SALES,), "Business Development/Partnership"),
    ("Strategic Alliances Director", (DIRECTOR,), (SALES,), "Business Development/Partnership"),
    ("Partner Manager", (MANAGER,), (SALES,), "Business Development/Partnership"),
    ("Sales Engineer", (BELOW,), (SALES, ENG), "Technical"),
    ("Pre-Sales Consultant", (BELOW,), (SALES, ENG), "Sales - Generic"),
    ("Sales Associate", (BELOW,), (SALES,), "Sales - Generic"),
    ("Sales Team Lead", (MANAGER,), (SALES,), "Sales - Generic"),
    ("Commercial Director", (DIRECTOR,), (SALES,), "Sales - Generic"),
    ("Chief Revenue Officer", (CXO,), (TOP, SALES), "Sales - Generic"),
    ("CRO", (CXO,), (TOP, SALES), "Sales - Generic"),
    ("RevOps Manager", (MANAGER,), (SALES, MKTG), "Marketing Operations"),
    ("Vertriebsleiter", (HEAD,), (SALES,), "Sales - Generic"),
    ("Directeur Commercial", (DIRECTOR,), (SALES,), "Sales - Generic"),
    ("Gerente de Ventas", (MANAGER,), (SALES,), "Sales - Generic"),
    ("Jefe de Ventas", (HEAD,), (SALES,), "Sales - Generic"),
    ("Responsable Commercial", (MANAGER,), (SALES,), "Sales - Generic"),
    # Marketing
    ("CMO", (CXO,), (TOP, MKTG), "Marketing - Generic"),
    ("VP Marketing", (VP,), (MKTG,), "Marketing - Generic"),
    ("Marketing Operations Manager", (MANAGER,), (MKTG,), "Marketing Operations"),
    ("Marketing Automation Specialist", (BELOW,), (MKTG,), "Marketing Operations"),
    ("Digital Marketing Manager", (MANAGER,), (MKTG,), "Digital Marketing"),
    ("Social Media Coordinator", (BELOW,), (MKTG,), "Digital Marketing"),
    ("Growth Marketing Lead", (STAFF,), (MKTG,), "Digital Marketing"),
    ("SEO Specialist", (BELOW,), (MKTG,), "Online Marketing"),
    ("SEM/PPC Manager", (MANAGER,), (MKTG,), "Online Marketing"),
    ("Affiliate Marketing Manager", (MANAGER,), (MKTG,), "Online Marketing"),
    ("Demand Generation Director", (DIRECTOR,), (MKTG,), "Campaign"),
    ("Campaign Manager", (MANAGER,), (MKTG,), "Campaign"),
    ("Email Marketing Specialist", (BELOW,), (MKTG,), "Campaign"),
    ("Events Manager", (MANAGER,), (MKTG,), "Events /Tradeshow"),
    ("Trade Show Coordinator", (BELOW,), (MKTG,), "Events /Tradeshow"),
    ("Field Marketing Manager", (MANAGER,), (MKTG,), "Events /Tradeshow"),
    ("Brand Manager", (MANAGER,), (MKTG,), "Strategic Marketing"),
    ("Market Research Analyst", (BELOW,), (MKTG,), "Strategic Marketing"),
    ("Product Marketing Manager", (MANAGER,), (MKTG,), "Product/Industry/Solutions Marketing"),
    (
        "Sr. Solutions Marketing Manager",
        (MANAGER,),
        (MKTG,),
        "Product/Industry/Solutions Marketing",
    ),
    ("Advertising Manager", (MANAGER,), (MKTG,), "Advertising"),
    ("Media Buyer", (BELOW,), (MKTG,), "Advertising"),
    ("Copywriter", (BELOW,), (MKTG,), "Advertising"),
    ("Marketing Coordinator", (BELOW,), (MKTG,), "Marketing - Generic"),
    ("Marketing Intern", (BELOW,), (MKTG,), "Marketing - Generic"),
    ("mktg mgr", (MANAGER,), (MKTG,), "Marketing - Generic"),
    ("Responsable Marketing", (MANAGER,), (MKTG,), "Marketing - Generic"),
    ("Gerente de Mercadeo", (MANAGER,), (MKTG,), "Marketing - Generic"),
    ("Marketingleiter", (HEAD,), (MKTG,), "Marketing - Generic"),
    # Information technology
    ("CIO", (CXO,), (TOP, IT), "Information Technology - Generic"),
    ("CISO", (CXO,), (TOP, IT), "IT Security"),
    ("IT Director", (DIRECTOR,), (IT,), "Information Technology - Generic"),
    ("Director of IT", (DIRECTOR,), (IT,), "Information Technology - Generic"),
    ("IT-Leiter", (HEAD,), (IT,), "Information Technology - Generic"),
    ("Responsable Informatique", (MANAGER,), (IT,), "Information Technology - Generic"),
    ("Head of Information Security", (HEAD,), (IT,), "IT Security"),
    ("Cyber Security Analyst", (BELOW,), (IT,), "IT Security"),
    ("SOC Analyst", (BELOW,), (IT,), "IT Security"),
    ("Penetration Tester", (BELOW,), (IT,), "IT Security"),
    ("Network Engineer", (BELOW,), (IT,), "Network Management"),
    ("Senior Network Engineer", (STAFF,), (IT,), "Network Management"),
    ("NOC Technician", (BELOW,), (IT,), "Network Management"),
    ("Infrastructure Manager", (MANAGER,), (IT,), "Infrastructure"),
    ("Cloud Engineer", (BELOW,), (IT,), "Infrastructure"),
    ("DevOps Engineer", (BELOW,), (IT,), "Infrastructure"),
    ("SRE", (BELOW,), (IT,), "Infrastructure"),
    ("Systems Engineer", (BELOW,), (IT,), "Infrastructure"),
    ("sr. mgr., it ops", (MANAGER,), (IT,), "Infrastructure"),
    ("MIS Manager", (MANAGER,), (IT,), "Information Systems"),
    ("Information Systems Manager", (MANAGER,), (IT,), "Information Systems"),
    ("Systems Analyst", (BELOW,), (IT,), "Information Systems"),
    ("Jefe de Sistemas", (HEAD,), (IT,), "Information Systems"),
    ("Telecommunications Manager", (MANAGER,), (IT,), "Telecommunications"),
    ("Telecom Engineer", (BELOW,), (IT,), "Telecommunications"),
    ("Help Desk Technician", (BELOW,), (IT,), "Help Desk/IT Support"),
    ("Service Desk Analyst", (BELOW,), (IT,), "Help Desk/IT Support"),
    ("IT Support Specialist", (BELOW,), (IT,), "Help Desk/IT Support"),
    ("System Administrator", (BELOW,), (IT,), "IT Admin"),
    ("Sys Admin", (BELOW,), (IT,), "IT Admin"),
    ("Sr. Systems Administrator", (STAFF,), (IT,), "IT Admin"),
    ("Desktop Support Technician", (BELOW,), (IT,), "IT Systems /Desktop"),
    ("End User Computing Manager", (MANAGER,), (IT,), "IT Systems /Desktop"),
    ("ERP Manager", (MANAGER,), (IT,), "IT Applications"),
    ("SAP Consultant", (BELOW,), (IT,), "IT Applications"),
    ("Salesforce Administrator", (BELOW,), (IT,), "IT Applications"),
    ("Applications Manager", (MANAGER,), (IT,), "IT Applications"),
    # Engineering and development
    ("VP Engineering", (VP,), (ENG,), "Engineering/Product Development"),
    ("VP Eng", (VP,), (ENG,), "Engineering/Product Development"),
    ("Sr Dir Eng", (DIRECTOR,), (ENG,), "Engineering/Product Development"),
    ("Director of Engineering", (DIRECTOR,), (ENG,), "Engineering/Product Development"),
    ("Engineering Manager", (MANAGER,), (ENG,), "Engineering/Product Development"),
    ("Software Engineer", (BELOW,), (ENG,), "Engineering/Product Development"),
    ("Staff Software Engineer", (STAFF,), (ENG,), "Engineering/Product Development"),
    ("Principal Engineer", (STAFF,), (ENG,), "Engineering/Product Development"),
    ("Lead Developer", (STAFF,), (ENG,), "Engineering/Product Development"),
    ("Distinguished Engineer", (STAFF,), (ENG,), "Engineering/Product Development"),
    ("Tech Lead", (STAFF,), (ENG,), "Technical"),
    ("Full-Stack Developer", (BELOW,), (ENG,), "Engineering/Product Development"),
    ("Front End Developer", (BELOW,), (ENG,), "Engineering/Product Development"),
    ("Jr. Web Developer", (BELOW,), (ENG,), "Engineering/Product Development"),
    ("Junior Software Engineer", (BELOW,), (ENG,), "Engineering/Product Development"),
    ("Software Engineering Intern", (BELOW,), (ENG,), "Engineering/Product Development"),
    ("Embedded Software Engineer", (BELOW,), (ENG,), "Engineering/Product Development"),
    ("Mechanical Engineer", (BELOW,), (ENG,), "Engineering/Product Development"),
    ("Electrical Engineer", (BELOW,), (ENG,), "Engineering/Product Development"),
    ("Civil Engineer", (BELOW,), (ENG,), "Engineering/Product Development"),
    ("Engineer", (BELOW,), (ENG,), "Engineering/Product Development"),
    ("Chief Engineer", (HEAD,), (ENG,), "Engineering/Product Development"),
    ("Ingénieur Logiciel", (BELOW,), (ENG,), "Engineering/Product Development"),
    ("Ingeniero de Software", (BELOW,), (ENG,), "Engineering/Product Development"),
    ("Softwareentwickler", (BELOW,), (ENG,), "Engineering/Product Development"),
    ("Entwicklungsingenieur", (BELOW,), (ENG,), "Engineering/Product Development"),
    ("Solutions Architect", (STAFF,), (ENG,), "Software Architecture / Technologist"),
    ("Enterprise Architect", (STAFF,), (ENG,), "Software Architecture / Technologist"),
    ("Chief Architect", (CXO,), (TOP, ENG), "Software Architecture / Technologist"),
    ("Database Administrator", (BELOW,), (ENG,), "DBA"),
    ("DBA", (BELOW,), (ENG,), "DBA"),
    ("Oracle DBA", (BELOW,), (ENG,), "DBA"),
    ("SQL Developer", (BELOW,), (ENG,), "DBA"),
    ("UX Designer", (BELOW,), (ENG,), "UX / UI Design"),
    ("UI/UX Designer", (BELOW,), (ENG,), "UX / UI Design"),
    ("Product Designer", (BELOW,), (ENG,), "UX / UI Design"),
    ("User Researcher", (BELOW,), (ENG,), "UX / UI Design"),
    ("Technical Director", (DIRECTOR,), (ENG,), "Technical"),
    ("Applications Engineer", (BELOW,), (ENG,), "Technical"),
    ("Field Engineer", (BELOW,), (ENG,), "Technical"),
    ("Technical Fellow", (STAFF,), (ENG,), "Technical"),
    ("Architect", (STAFF,), (ENG,), "Architecture, Design & Planning"),
    ("Project Architect", (STAFF,), (ENG,), "Architecture, Design & Planning"),
    ("Urban Planner", (BELOW,), (ENG,), "Architecture, Design & Planning"),
    ("CAD Drafter", (BELOW,), (ENG,), "Architecture, Design & Planning"),
    ("R&D Manager", (MANAGER,), (ENG,), "Research & Development"),
    ("Head of R&D", (HEAD,), (ENG,), "Research & Development"),
    ("Research Scientist", (BELOW,), (ENG,), "Research & Development"),
    ("Data Scientist", (BELOW,), (ENG,), "Research & Development"),
    ("Machine Learning Engineer", (BELOW,), (ENG,), "Research & Development"),
    ("Chemist", (BELOW,), (ENG,), "Research & Development"),
    ("Product Manager", (MANAGER,), (ENG,), "Product Management"),
    ("Senior Product Manager", (MANAGER,), (ENG,), "Product Management"),
    ("Group Product Manager", (MANAGER,), (ENG,), "Product Management"),
    ("Product Owner", (BELOW,), (ENG,), "Product Management"),
    ("Chief Product Officer", (CXO,), (TOP, ENG), "Product Management"),
    ("eCommerce Manager", (MANAGER,), (ENG,), "E-Commerce & Mobile"),
    ("E-Commerce Director", (DIRECTOR,), (ENG,), "E-Commerce & Mobile"),
    ("iOS Developer", (BELOW,), (ENG,), "E-Commerce & Mobile"),
    ("Mobile App Developer", (BELOW,), (ENG,), "E-Commerce & Mobile"),
    # Miscellaneous
    ("Graphic Designer", (BELOW,), (MISC,), "Design"),
    ("Creative Director", (DIRECTOR,), (MISC,), "Design"),
    ("Art Director", (DIRECTOR,), (MISC,), "Design"),
    ("Designer", (BELOW,), (MISC,), "Design"),
    ("Business Intelligence Analyst", (BELOW,), (MISC,), "Business Intelligence"),
    ("BI Developer", (BELOW,), (MISC, ENG), "Business Intelligence"),
    ("Data Analyst", (BELOW,), (MISC,), "Business Intelligence"),
    ("Head of Analytics", (HEAD,), (MISC,), "Business Intelligence"),
    ("Analyst", (BELOW,), (MISC,), "Business Intelligence"),
    ("Regional Director", (DIRECTOR,), (MISC,), "International / Regional"),
    ("Area Manager", (MANAGER,), (MISC,), "International / Regional"),
    ("EMEA Director", (DIRECTOR,), (MISC,), "International / Regional"),
    ("Fraud Analyst", (BELOW,), (MISC,), "Risk/Fraud"),
    ("Risk Manager", (MANAGER,), (MISC,), "Risk/Fraud"),
    ("Associate", (BELOW,), (MISC,), "Associate"),
    ("Planner", (BELOW,), (MISC,), "Planning"),
    ("Planning Manager", (MANAGER,), (MISC,), "Planning"),
    ("QA Engineer", (BELOW,), (MISC,), "Quality Control/ Assurance"),
    ("Quality Manager", (MANAGER,), (MISC,), "Quality Control/ Assurance"),
    ("Quality Control Inspector", (BELOW,), (MISC,), "Quality Control/ Assurance"),
    ("Software Tester", (BELOW,), (MISC,), "Quality Control/ Assurance"),
    ("Director of Strategy", (DIRECTOR,), (MISC,), "Strategy"),
    ("Strategy Consultant", (BELOW,), (MISC,), "Strategy"),
    ("Management Consultant", (BELOW,), (MISC,), "Strategy"),
    ("Consultant", (BELOW,), (MISC,), None),
    ("Specialist", (BELOW,), (MISC,), None),
    ("Director", (DIRECTOR,), (MISC,), None),
    ("Deputy Director", (DIRECTOR,), (MISC,), None),
    ("Executive Director", (DIRECTOR,), (MISC,), None),
    ("Head of Department", (HEAD,), (MISC,), None),
    ("Assistant Manager", (MANAGER,), (MISC,), None),
    ("Supervisor", (MANAGER,), (MISC,), None),
    ("Intern", (BELOW,), (MISC,), None),
    # Operations
    ("COO", (CXO,), (TOP, OPS), "Operations - Generic"),
    ("VP Ops", (VP,), (OPS,), "Operations - Generic"),
    ("Assistant Vice President, Operations", (VP,), (OPS,), "Operations - Generic"),
    ("Operations Manager", (MANAGER,), (OPS,), "Operations - Generic"),
    ("Director of Business Operations", (DIRECTOR,), (OPS,), "Operations - Generic"),
    ("Loss Prevention Manager", (MANAGER,), (OPS,), "Loss Prevention/Protection"),
    ("Asset Protection Specialist", (BELOW,), (OPS,), "Loss Prevention/Protection"),
    ("Security Officer", (BELOW,), (OPS,), "Loss Prevention/Protection"),
    ("Customer Service Representative", (BELOW,), (OPS,), "Customer Service/Support"),
    ("CSR", (BELOW,), (OPS,), "Customer Service/Support"),
    ("Team Leader, Customer Service", (MANAGER,), (OPS,), "Customer Service/Support"),
    ("Call Center Supervisor", (MANAGER,), (OPS,), "Customer Service/Support"),
    ("Call Centre Agent", (BELOW,), (OPS,), "Customer Service/Support"),
    ("Merchandising Manager", (MANAGER,), (OPS,), "Merchandise Management"),
    ("Visual Merchandiser", (BELOW,), (OPS,), "Merchandise Management"),
    ("EHS Manager", (MANAGER,), (OPS,), "Health/Safety"),
    ("Health & Safety Officer", (BELOW,), (OPS,), "Health/Safety"),
    ("Safety Coordinator", (BELOW,), (OPS,), "Health/Safety"),
    ("Production Supervisor", (MANAGER,), (OPS,), "Production"),
    ("Manufacturing Manager", (MANAGER,), (OPS,), "Production"),
    ("Machine Operator", (BELOW,), (OPS,), "Production"),
    ("Maintenance Technician", (BELOW,), (OPS,), "Maintenance"),
    ("Maintenance Supervisor", (MANAGER,), (OPS,), "Maintenance"),
    ("Field Service Technician", (BELOW,), (OPS,), "Maintenance"),
    ("Apprentice Electrician", (BELOW,), (OPS,), "Maintenance"),
    ("Business Continuity Manager", (MANAGER,), (OPS,), "Business Continuity"),
    ("Disaster Recovery Analyst", (BELOW,), (OPS,), "Business Continuity"),
    ("Project Manager", (MANAGER,), (OPS,), "Project / Program Management"),
    ("Senior Program Manager", (MANAGER,), (OPS,), "Project / Program Management"),
    ("Programme Manager", (MANAGER,), (OPS,), "Project / Program Management"),
    ("PMO Director", (DIRECTOR,), (OPS,), "Project / Program Management"),
    ("Scrum Master", (BELOW,), (OPS,), "Project / Program Management"),
    ("Chef de Projet", (MANAGER,), (OPS,), "Project / Program Management"),
    ("Projektmanager", (MANAGER,), (OPS,), "Project / Program Management"),
    # Supply chain
    ("Purchasing Manager", (MANAGER,), (SCM,), "Purchasing/Procurement"),
    ("Procurement Specialist", (BELOW,), (SCM,), "Purchasing/Procurement"),
    ("Buyer", (BELOW,), (SCM,), "Purchasing/Procurement"),
    ("Senior Buyer", (STAFF,), (SCM,), "Purchasing/Procurement"),
    ("Head of Procurement", (HEAD,), (SCM,), "Purchasing/Procurement"),
    ("Einkaufsleiter", (HEAD,), (SCM,), "Purchasing/Procurement"),
    ("Responsable Achats", (MANAGER,), (SCM,), "Purchasing/Procurement"),
    ("Jefe de Compras", (HEAD,), (SCM,), "Purchasing/Procurement"),
    ("Category Manager", (MANAGER,), (SCM,), "Category/Commodity"),
    ("Commodity Manager", (MANAGER,), (SCM,), "Category/Commodity"),
    ("Supply Chain Manager", (MANAGER,), (SCM,), "Supply chain - Generic"),
    ("VP Supply Chain", (VP,), (SCM,), "Supply chain - Generic"),
    ("Demand Planner", (BELOW,), (SCM, MISC), "Planning"),
    ("Inventory Control Specialist", (BELOW,), (SCM,), "Inventory"),
    ("Stock Controller", (BELOW,), (SCM,), "Inventory"),
    ("Logistics Coordinator", (BELOW,), (SCM,), "Logistics"),
    ("Transportation Manager", (MANAGER,), (SCM,), "Logistics"),
    ("Fleet Manager", (MANAGER,), (SCM,), "Logistics"),
    ("Truck Driver", (BELOW,), (SCM,), "Logistics"),
    ("Dispatcher", (BELOW,), (SCM,), "Logistics"),
    ("Warehouse Manager", (MANAGER,), (SCM,), "Warehouse"),
    ("Warehouse Associate", (BELOW,), (SCM,), "Warehouse"),
    ("Forklift Operator", (BELOW,), (SCM,), "Warehouse"),
    ("Distribution Center Manager", (MANAGER,), (SCM,), "Warehouse"),
    ("Lagerleiter", (HEAD,), (SCM,), "Warehouse"),
    ("Import/Export Coordinator", (BELOW,), (SCM,), "Import/Export"),
    ("Customs Broker", (BELOW,), (SCM,), "Import/Export"),
    ("Trade Compliance Manager", (MANAGER,), (SCM, LEGAL), "Import/Export"),
    # Facility operations
    ("Facilities Manager", (MANAGER,), (FAC,), "Facilities/Branch"),
    ("Facility Coordinator", (BELOW,), (FAC,), "Facilities/Branch"),
    ("Branch Manager", (MANAGER,), (FAC,), "Facilities/Branch"),
    ("Property Manager", (MANAGER,), (FAC,), "Real Estate/Property"),
    ("Real Estate Agent", (BELOW,), (FAC,), "Real Estate/Property"),
    ("Leasing Consultant", (BELOW,), (FAC,), "Real Estate/Property"),
    ("Director of Real Estate", (DIRECTOR,), (FAC,), "Real Estate/Property"),
    ("Plant Manager", (MANAGER,), (FAC,), "Plant"),
    ("Plant Director", (DIRECTOR,), (FAC,), "Plant"),
    ("Werkleiter", (HEAD,), (FAC,), "Plant"),
    ("Executive Chef", (HEAD,), (FAC,), "Culinary"),
    ("Head Chef", (HEAD,), (FAC,), "Culinary"),
    ("Sous Chef", (BELOW,), (FAC,), "Culinary"),
    ("Food and Beverage Manager", (MANAGER,), (FAC,), "Culinary"),
    ("F&B Manager", (MANAGER,), (FAC,), "Culinary"),
    ("Restaurant Manager", (MANAGER,), (FAC,), "Culinary"),
    ("Store Manager", (MANAGER,), (FAC,), "Store"),
    ("Assistant Store Manager", (MANAGER,), (FAC,), "Store"),
    ("Cashier", (BELOW,), (FAC,), "Store"),
    ("Retail Associate", (BELOW,), (FAC,), "Store"),
    # Finance, banking, insurance
    ("CFO", (CXO,), (TOP, FIN), "Finance"),
    ("VP Finance", (VP,), (FIN,), "Finance"),
    ("Finance Manager", (MANAGER,), (FIN,), "Finance"),
    ("Financial Analyst", (BELOW,), (FIN,), "Finance"),
    ("Senior Financial Analyst", (STAFF,), (FIN,), "Finance"),
    ("Directeur Financier", (DIRECTOR,), (FIN,), "Finance"),
    ("FP&A Manager", (MANAGER,), (FIN,), "Financial Planning & Investment"),
    ("Controller", (MANAGER,), (FIN,), "Controller"),
    ("Financial Controller", (MANAGER,), (FIN,), "Controller"),
    ("Comptroller", (MANAGER,), (FIN,), "Controller"),
    ("Treasurer", (MANAGER,), (FIN,), "Cash Management"),
    ("Treasury Analyst", (BELOW,), (FIN,), "Cash Management"),
    ("Credit Controller", (BELOW,), (FIN,), "Cash Management"),
    ("Collections Specialist", (BELOW,), (FIN,), "Cash Management"),
    ("Portfolio Manager", (MANAGER,), (FIN,), "Trade and Portfolio"),
    ("Equity Trader", (BELOW,), (FIN,), "Trade and Portfolio"),
    ("Quantitative Analyst", (BELOW,), (FIN,), "Trade and Portfolio"),
    ("Financial Advisor", (BELOW,), (FIN,), "Financial Planning & Investment"),
    ("Financial Adviser", (BELOW,), (FIN,), "Financial Planning & Investment"),
    ("Wealth Manager", (MANAGER,), (FIN,), "Financial Planning & Investment"),
    ("Investment Analyst", (BELOW,), (FIN,), "Financial Planning & Investment"),
    ("Private Equity Associate", (BELOW,), (FIN,), "Financial Planning & Investment"),
    ("Credit Risk Manager", (MANAGER,), (FIN,), "Risk & Fraud"),
    ("Bank Fraud Analyst", (BELOW,), (FIN,), "Risk & Fraud"),
    ("Loan Officer", (BELOW,), (FIN,), "Banking"),
    ("Bank Teller", (BELOW,), (FIN,), "Banking"),
    ("Mortgage Advisor", (BELOW,), (FIN,), "Banking"),
    ("Relationship Banker", (BELOW,), (FIN,), "Banking"),
    ("Underwriter", (BELOW,), (FIN,), "Insurance"),
    ("AVP Underwriting", (VP,), (FIN,), "Insurance"),
    ("Claims Adjuster", (BELOW,), (FIN,), "Insurance"),
    ("Actuary", (BELOW,), (FIN,), "Insurance"),
    ("Insurance Agent", (BELOW,), (FIN,), "Insurance"),
    # Accounting
    ("Accountant", (BELOW,), (ACCT,), "Accounting"),
    ("Staff Accountant", (BELOW,), (ACCT,), "Accounting"),
    ("Senior Accountant", (STAFF,), (ACCT,), "Accounting"),
    ("Trainee Accountant", (BELOW,), (ACCT,), "Accounting"),
    ("Senior Manager, Accounting", (MANAGER,), (ACCT,), "Accounting"),
    ("Accounts Payable Clerk", (BELOW,), (ACCT,), "Accounting"),
    ("Bookkeeper", (BELOW,), (ACCT,), "Accounting"),
    ("Payroll Specialist", (BELOW,), (ACCT,), "Accounting"),
    ("CPA", (BELOW,), (ACCT,), "Accounting"),
    ("Buchhalter", (BELOW,), (ACCT,), "Accounting"),
    ("Comptable", (BELOW,), (ACCT,), "Accounting"),
    ("Internal Auditor", (BELOW,), (ACCT,), "Audit"),
    ("Audit Manager", (MANAGER,), (ACCT,), "Audit"),
    ("Tax Manager", (MANAGER,), (ACCT,), "Corporate Tax"),
    ("Director of Tax", (DIRECTOR,), (ACCT,), "Corporate Tax"),
    # Legal, regulatory and compliance
    ("General Counsel", (CXO,), (LEGAL,), "Legal"),
    ("Associate General Counsel", (DIRECTOR,), (LEGAL,), "Legal"),
    ("Legal Counsel", (BELOW,), (LEGAL,), "Legal"),
    ("Attorney", (BELOW,), (LEGAL,), "Legal"),
    ("Corporate Lawyer", (BELOW,), (LEGAL,), "Legal"),
    ("Paralegal", (BELOW,), (LEGAL,), "Legal"),
    ("Head of Legal", (HEAD,), (LEGAL,), "Legal"),
    ("Chief Legal Officer", (CXO,), (TOP, LEGAL), "Legal"),
    ("Abogado", (BELOW,), (LEGAL,), "Legal"),
    ("Compliance Officer", (BELOW,), (LEGAL,), "Regulatory & Compliance"),
    ("Chief Compliance Officer", (CXO,), (TOP, LEGAL), "Regulatory & Compliance"),
    ("Regulatory Affairs Manager", (MANAGER,), (LEGAL,), "Regulatory & Compliance"),
    ("Data Protection Officer", (BELOW,), (LEGAL,), "Regulatory & Compliance"),
    ("AML Analyst", (BELOW,), (LEGAL,), "Regulatory & Compliance"),
    # Administration
    ("Executive Assistant", (BELOW,), (ADMIN,), "Secretary"),
    ("Executive Assistant to the CEO", (BELOW,), (ADMIN,), "Secretary"),
    ("Assistant to the President", (BELOW,), (ADMIN,), "Administration - Generic"),
    ("Administrative Assistant", (BELOW,), (ADMIN,), "Secretary"),
    ("Receptionist", (BELOW,), (ADMIN,), "Secretary"),
    ("Secretary", (BELOW,), (ADMIN,), "Secretary"),
    ("Office Manager", (MANAGER,), (ADMIN,), "Administration - Generic"),
    ("Administration Manager", (MANAGER,), (ADMIN,), "Administration - Generic"),
    ("Admin Coordinator", (BELOW,), (ADMIN,), "Administration - Generic"),
    ("Data Entry Clerk", (BELOW,), (ADMIN,), "Administration - Generic"),
    ("Coordinator", (BELOW,), (ADMIN,), "Administration - Generic"),
    ("Chief Executive Assistant", (BELOW,), (ADMIN,), "Secretary"),
    ("Manager, Office of the CEO", (MANAGER,), (ADMIN,), "Administration - Generic"),
    ("M&A Director", (DIRECTOR,), (ADMIN,), "Merger/Acquisition"),
    ("Corporate Development Manager", (MANAGER,), (ADMIN,), "Merger/Acquisition"),
    ("Head of Mergers and Acquisitions", (HEAD,), (ADMIN,), "Merger/Acquisition"),
    # Human resources
    ("CHRO", (CXO,), (TOP, HR), "Human Resources"),
    ("VP of People", (VP,), (HR,), "Human Resources"),
    ("HR Manager", (MANAGER,), (HR,), "Human Resources"),
    ("Senior Manager, HR Operations", (MANAGER,), (HR,), "Human Resources"),
    ("HRBP", (BELOW,), (HR,), "Human Resources"),
    ("Senior HR Business Partner", (STAFF,), (HR,), "Human Resources"),
    ("Talent Acquisition Partner", (BELOW,), (HR,), "Human Resources"),
    ("Technical Recruiter", (BELOW,), (HR,), "Human Resources"),
    ("Compensation & Benefits Manager", (MANAGER,), (HR,), "Human Resources"),
    ("Responsable RH", (MANAGER,), (HR,), "Human Resources"),
    ("Directeur des Ressources Humaines", (DIRECTOR,), (HR,), "Human Resources"),
    ("Personalleiter", (HEAD,), (HR,), "Human Resources"),
    ("Gerente de Recursos Humanos", (MANAGER,), (HR,), "Human Resources"),
    ("Training Manager", (MANAGER,), (HR,), "Training & Development"),
    ("L&D Specialist", (BELOW,), (HR,), "Training & Development"),
    ("Learning and Development Manager", (MANAGER,), (HR,), "Training & Development"),
    ("Corporate Trainer", (BELOW,), (HR,), "Training & Development"),
    ("Sales Enablement Manager", (MANAGER,), (SALES, HR), "Training & Development"),
    ("Instructional Designer", (BELOW,), (HR,), "Training & Development"),
    # Communications and public relations
    ("Communications Manager", (MANAGER,), (COMMS,), "Communications"),
    ("Internal Communications Specialist", (BELOW,), (COMMS,), "Communications"),
    ("Director of Corporate Communications", (DIRECTOR,), (COMMS,), "Communications"),
    ("Technical Writer", (BELOW,), (COMMS,), "Communications"),
    ("Investor Relations Director", (DIRECTOR,), (COMMS,), "Communications"),
    ("PR Manager", (MANAGER,), (COMMS,), "Media & PR"),
    ("Public Relations Specialist", (BELOW,), (COMMS,), "Media & PR"),
    ("Press Officer", (BELOW,), (COMMS,), "Media & PR"),
    ("Media Relations Manager", (MANAGER,), (COMMS,), "Media & PR"),
    ("Editor", (BELOW,), (COMMS,), "Media & PR"),
    ("Editor-in-Chief", (HEAD,), (COMMS,), "Media & PR"),
    ("Journalist", (BELOW,), (COMMS,), "Media & PR"),
    # Medical and wellness
    ("Chief Medical Officer", (CXO,), (TOP, MED), "Doctor"),
    ("Medical Director", (DIRECTOR,), (MED,), "Doctor"),
    ("Physician", (BELOW,), (MED,), "Doctor"),
    ("Dentist", (BELOW,), (MED,), "Doctor"),
    ("Médico", (BELOW,), (MED,), "Doctor"),
    ("Surgeon", (BELOW,), (MED,), "Specialist"),
    ("Cardiologist", (BELOW,), (MED,), "Specialist"),
    ("Psychiatrist", (BELOW,), (MED,), "Specialist"),
    ("Registered Nurse", (BELOW,), (MED,), "Patient Care"),
    ("RN", (BELOW,), (MED,), "Patient Care"),
    ("Nurse Manager", (MANAGER,), (MED,), "Patient Care"),
    ("Director of Nursing", (DIRECTOR,), (MED,), "Patient Care"),
    ("Physical Therapist", (BELOW,), (MED,), "Patient Care"),
    ("Enfermera", (BELOW,), (MED,), "Patient Care"),
    ("Pharmacist", (BELOW,), (MED,), "Pharmacist"),
    ("Pharmacy Technician", (BELOW,), (MED,), "Pharmacist"),
    ("Lab Technician", (BELOW,), (MED,), "Laboratory"),
    ("Medical Laboratory Scientist", (BELOW,), (MED,), "Laboratory"),
    ("Phlebotomist", (BELOW,), (MED,), "Laboratory"),
    ("Wellness Coordinator", (BELOW,), (MED,), "Wellness"),
    ("Personal Trainer", (BELOW,), (MED,), "Wellness"),
    ("Dietitian", (BELOW,), (MED,), "Wellness"),
    ("Healthcare Administrator", (BELOW,), (MED,), "Medical - Generic"),
    ("Clinic Manager", (MANAGER,), (MED,), "Medical - Generic"),
    # Education
    ("Teacher", (BELOW,), (EDU,), "Education / Teaching"),
    ("High School Math Teacher", (BELOW,), (EDU,), "Education / Teaching"),
    ("Associate Professor", (BELOW,), (EDU,), "Education / Teaching"),
    ("Lecturer", (BELOW,), (EDU,), "Education / Teaching"),
    ("Tutor", (BELOW,), (EDU,), "Education / Teaching"),
    ("Dean of Students", (HEAD,), (EDU,), "Education / Teaching"),
    ("School Principal", (HEAD,), (EDU,), "Education / Teaching"),
    ("Headmaster", (HEAD,), (EDU,), "Education / Teaching"),
    ("Department Chair", (HEAD,), (EDU,), "Education / Teaching"),
    ("Profesor", (BELOW,), (EDU,), "Education / Teaching"),
    ("Lehrerin", (BELOW,), (EDU,), "Education / Teaching"),
    # Casing, punctuation and abbreviations
    ("vp, SALES", (VP,), (SALES,), "Sales - Generic"),
    ("V.P. of Marketing", (VP,), (MKTG,), "Marketing - Generic"),
    ("DIR. OF HR", (DIRECTOR,), (HR,), "Human Resources"),
    ("Senior Director of Marketing", (DIRECTOR,), (MKTG,), "Marketing - Generic"),
    ("Associate Director, Finance", (DIRECTOR,), (FIN,), "Finance"),
    ("Summer Intern - Finance", (BELOW,), (FIN,), "Finance"),
    ("  head   of  SALES  ", (HEAD,), (SALES,), "Sales - Generic"),
]

ALL_TITLES = [title for title, *_ in TAXONOMY_EXAMPLES + TITLES]


@pytest.mark.parametrize(("title", "levels", "functions"), TAXONOMY_EXAMPLES)
def test_taxonomy_examples(title: str, levels: tuple[str, ...], functions: tuple[str, ...]):
    found = classify(title)
    assert found.levels == levels
    assert set(functions) <= set(found.functions)


def test_taxonomy_example_sub_functions():
    assert classify("Head of Marketing Ops").sub_functions == ("Marketing Operations",)
    assert classify("Account Executive").sub_functions == ("Account Executive/Management",)
    assert classify("CTO").functions == ("Top Management", "Engineering and Development")
    assert classify("Chief People Officer").levels == ("Founder/CXO",)


@pytest.mark.parametrize(("title", "levels", "functions", "sub_function"), TITLES)
def test_title(title: str, levels: tuple[str, ...], functions: tuple[str, ...], sub_function):
    found = classify(title)
    assert found.levels == levels
    assert set(functions) <= set(found.functions), found
    if sub_function is not None:
        assert sub_function in found.sub_functions, found


def test_titles_table_is_large_and_unique():
    assert len(TITLES) >= 200
    assert len(set(ALL_TITLES)) == len(ALL_TITLES)


def test_every_function_and_level_is_covered_by_the_table():
    assert {lvl for _, levels, *_ in TITLES for lvl in levels} == set(LEVELS)
    assert {fn for _, _, functions, _ in TITLES for fn in functions} == set(FUNCTIONS)


@pytest.mark.parametrize("title", ALL_TITLES)
def test_every_value_is_taxonomy_vocabulary_in_taxonomy_order(title: str):
    found = classify(title)
    subs = [sub for fn in FUNCTIONS for sub in FUNCTIONS[fn]]
    assert found.levels and found.functions
    assert list(found.levels) == [lvl for lvl in LEVELS if lvl in found.levels]
    assert list(found.functions) == [fn for fn in FUNCTIONS if fn in found.functions]
    assert list(found.sub_functions) == [sub for sub in subs if sub in found.sub_functions]
    for sub in found.sub_functions:
        assert any(sub in FUNCTIONS[fn] for fn in found.functions)


def test_vocabulary_is_copied_exactly():
    assert LEVELS == (
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
    assert len(FUNCTIONS) == 17
    assert FUNCTIONS["Legal /Regulatory & Compliance"] == ("Regulatory & Compliance", "Legal")
    assert "Quality Control/ Assurance" in FUNCTIONS["Miscellaneous"]
    assert "Events /Tradeshow" in FUNCTIONS["Marketing"]
    assert "IT Systems /Desktop" in FUNCTIONS["Information Technology"]
    assert FUNCTIONS["Education / Teaching"] == ("Education / Teaching",)


@pytest.mark.parametrize(
    ("title", "normalized"),
    [
        ("VP of Sales & Marketing", "vice president sales marketing"),
        ("Vice President, Sales and Marketing", "vice president sales marketing"),
        ("Sr. Mgr., IT Ops", "senior manager information technology operations"),
        ("S.V.P. R&D", "senior vice president research development"),
        ("Head of the M&A team", "head mergers acquisitions team"),
        ("Co-Founder/CEO", "cofounder chief executive officer"),
        ("E-Commerce Mgr", "ecommerce manager"),
        ("Int'l Biz Dev", "international business development"),
        ("Geschäftsführer", "geschaftsfuhrer"),
        ("Directeur d'Achats", "directeur achats"),
        ("Jefe de Ventas", "jefe ventas"),
        ("Programme Manager (EMEA)", "program manager emea"),
        ("", ""),
    ],
)
def test_normalize_title(title: str, normalized: str):
    assert normalize_title(title) == normalized


@pytest.mark.parametrize(
    "title",
    [
        *ALL_TITLES,
        "İstanbul Bölge Müdürü",
        "Генеральный директор",
        "営業部長",
        "ＣＥＯ",
        "Straße & Co. KG",
        "R & D / E-Commerce @ Acme",
        "e-mail marketing, l'équipe",
    ],
)
def test_normalize_title_is_idempotent(title: str):
    once = normalize_title(title)
    assert normalize_title(once) == once
    assert classify(once) == classify(title)


def test_random_word_salad_is_idempotent_and_never_raises():
    words = ["R&D", "M&A", "V.P.", "Int'l", "co-", "e-", "sec", "ops", "biz", "dev", "cyber"]
    words += ["security", "business", "of", "the", "&", "/", "Sr.", "CEO", "hr", "it", "Ü", "ß"]
    words += [title for title, *_ in TITLES[::7]]
    rng = random.Random(20240601)
    for _ in range(3000):
        title = " ".join(rng.choices(words, k=rng.randint(1, 6)))
        once = normalize_title(title)
        assert normalize_title(once) == once, title
        assert bool(classify(title).levels) == bool(once), title


@pytest.mark.parametrize("title", ["", " ", "\t\n", "---", "&", "of the"])
def test_empty_titles_give_empty_tuples(title: str):
    assert classify(title) == TitleClass((), (), ())


@pytest.mark.parametrize(
    "title",
    [
        "Генеральный директор",
        "営業部長",
        "مدير المبيعات",
        "Ünternehmensberater",
        "ＣＥＯ",
        "🚀 Growth",
    ],
)
def test_non_ascii_titles_classify(title: str):
    found = classify(title)
    assert len(found.levels) >= 1
    assert len(found.functions) >= 1


def test_full_width_and_accents_fold_to_ascii():
    assert classify("ＣＥＯ") == classify("CEO")
    assert classify("Directeur Général") == classify("directeur general")


def test_company_after_at_is_ignored():
    found = classify("Sales Manager @ Acme Marketing")
    assert found.levels == (MANAGER,)
    assert found.functions == (SALES,)


def test_boss_of_an_assistant_gives_no_level():
    assert classify("Executive Assistant to the Chairman & CEO").levels == (BELOW,)
    assert TOP not in classify("Personal Assistant to the Managing Director").functions


def test_partner_is_a_level_only_when_it_leads():
    assert classify("Partner, Tax").levels == (CXO,)
    assert classify("HR Business Partner").levels == (BELOW,)
    assert classify("Partner Success Specialist").levels == (BELOW,)


def test_weak_words_yield_to_a_named_function():
    assert classify("Network Engineer").functions == (IT,)
    assert classify("Operations Analyst").functions == (OPS,)
    assert classify("UX Designer").sub_functions == ("UX / UI Design",)


def test_non_string_title_gives_empty_tuples():
    assert classify(None) == TitleClass((), (), ())  # type: ignore[arg-type]


def test_classify_is_cached():
    classify.cache_clear()
    first = classify("Director of Sales")
    assert classify("Director of Sales") is first
    assert classify.cache_info().hits == 1


@pytest.mark.parametrize(
    ("text", "levels", "functions"),
    [
        ("VP", {"VP"}, set()),
        ("SVP", {"VP"}, set()),
        ("Directors", {"Director"}, set()),
        ("C-Level", {"Founder/CXO"}, set()),
        ("Marketing", set(), {"Marketing"}),
        ("IT", set(), {"Information Technology"}),
        ("Director of Sales", {"Director"}, {"Sales"}),
        ("VP, Sales & Marketing", {"VP"}, {"Sales", "Marketing"}),
        ("Human Resources and related", set(), {"Human Resources and related"}),
    ],
)
def test_taxonomy_terms_of_a_filter(text: str, levels: set[str], functions: set[str]) -> None:
    terms = taxonomy_terms(text)
    assert terms is not None and (terms.levels, terms.functions) == (levels, functions)


@pytest.mark.parametrize("text", ["CTO", "Software Engineer", "Head of Procurement", "", "&"])
def test_other_titles_name_no_taxonomy_terms(text: str) -> None:
    assert taxonomy_terms(text) is None
