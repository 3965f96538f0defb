"""The app's state: the session (settings, the current problem, what runs), session files and
where the user's things are kept. No widgets here: views subscribe to the session's signals."""
