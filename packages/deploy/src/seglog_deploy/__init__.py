"""Build the functions' Lambda artifacts and deploy the template (DESIGN §10). Never shipped in an artifact."""
