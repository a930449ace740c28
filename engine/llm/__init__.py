"""Model backend code shared by generation and the judge (neutral: it imports neither)."""
