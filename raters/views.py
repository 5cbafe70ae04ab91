from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.db import IntegrityError
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from datasets.models import Answer, CounterfactualPair, Dataset, ImportJob, Question

from . import services
from .forms import JoinForm
from .models import Invitation

# The study a rater arrived for (panel link or invitation): its consent text, and where consumers draw items
# (studies/panel_views.py).
ONBOARDING_STUDY = "raters.onboarding_study_id"


@require_GET
@login_required
def home(request):
    """Each role's starting page: coordinators see the data and recent imports, raters their pool."""
    context = {
        "counts": {
            "datasets": Dataset.objects.count(),
            "questions": Question.objects.count(),
            "pairs": CounterfactualPair.objects.count(),
            "answers": Answer.objects.count(),
        },
        "recent_imports": ImportJob.objects.all()[:5],
    }
    return render(request, "home.html", context)


def message_page(request, *, title: str, text: str, status: int = 200):
    """A page that tells the visitor one thing (why a link cannot be followed, what to do)."""
    return render(request, "raters/message.html", {"title": title, "text": text}, status=status)


@require_http_methods(["GET", "POST"])
def join(request, token):
    invitation = get_object_or_404(Invitation.objects.select_related("pool"), token=token)
    if request.user.is_authenticated:
        text = f"You are signed in as {request.user.get_username()}. Log out first to create an account."
        return message_page(request, title="You already have an account", text=text)
    unusable = "This invitation can no longer be used"
    if problem := services.invitation_problem(invitation):
        return message_page(request, title=unusable, text=f"{problem} Ask the study team for a new one.", status=410)
    form = JoinForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            profile = services.accept_invitation(
                invitation=invitation, username=data["username"], password=data["password1"]
            )
        except services.InvitationUnavailable:
            text = "It was used up or expired a moment ago. Ask the study team for a new one."
            return message_page(request, title=unusable, text=text, status=410)
        except IntegrityError:
            form.add_error("username", "Someone took this username a moment ago; choose another.")
        else:
            login(request, profile.user)
            if invitation.study_id:
                request.session[ONBOARDING_STUDY] = invitation.study_id
            return redirect("raters:onboarding")
    return render(request, "raters/join.html", {"form": form, "invitation": invitation})
