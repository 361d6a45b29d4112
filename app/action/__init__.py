"""`signoff-bot verify`: a pull request verified as the App would, without server or database (the GitHub Action)."""
