from .roles import is_analyst, is_coordinator


def roles(request):
    user = request.user
    return {
        "user_is_coordinator": is_coordinator(user),
        "user_is_analyst": is_analyst(user),
        "rater_profile": getattr(user, "rater_profile", None) if user.is_authenticated else None,
    }
