"""Start Funnel Explorer: `python app.py --help` (the same as the installed `funnel-explorer`;
the code is app/main.py)."""

from app.main import main

if __name__ == "__main__":
    main()
