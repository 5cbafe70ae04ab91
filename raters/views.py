from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from datasets.models import Answer, CounterfactualPair, Dataset, ImportJob, Question
from studies.models import Study

from . import services
from .forms import ConsentForm, DemographicsForm, ExpertBackgroundForm, JoinForm, PanelEntryForm
from .models import Invitation, RaterProfile

# The study a rater arrived for (panel link or invitation): its consent text, and where consumers draw items.
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


def _message(request, *, title: str, text: str, status: int = 200):
    return render(request, "raters/message.html", {"title": title, "text": text}, status=status)


def _rater_profile(user) -> RaterProfile:
    profile = RaterProfile.objects.select_related("pool").filter(user=user).first()
    if profile is None:
        raise PermissionDenied("This page is for raters.")
    return profile


@require_http_methods(["GET", "POST"])
def join(request, token):
    invitation = get_object_or_404(Invitation.objects.select_related("pool"), token=token)
    if request.user.is_authenticated:
        text = f"You are signed in as {request.user.get_username()}. Log out first to create an account."
        return _message(request, title="You already have an account", text=text)
    unusable = "This invitation can no longer be used"
    if problem := services.invitation_problem(invitation):
        return _message(request, title=unusable, text=f"{problem} Ask the study team for a new one.", status=410)
    form = JoinForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            profile = services.accept_invitation(
                invitation=invitation, username=data["username"], password=data["password1"]
            )
        except services.InvitationUnavailable:
            text = "It was used up or expired a moment ago. Ask the study team for a new one."
            return _message(request, title=unusable, text=text, status=410)
        except IntegrityError:
            form.add_error("username", "Someone took this username a moment ago; choose another.")
        else:
            login(request, profile.user)
            if invitation.study_id:
                request.session[ONBOARDING_STUDY] = invitation.study_id
            return redirect("raters:onboarding")
    return render(request, "raters/join.html", {"form": form, "invitation": invitation})


ONBOARDING_FORMS = {"consent": ConsentForm, "demographics": DemographicsForm, "background": ExpertBackgroundForm}


@require_http_methods(["GET", "POST"])
@login_required
def onboarding(request):
    """Consent (consumers), then the background survey; the step shown follows from what the rater has done."""
    profile = _rater_profile(request.user)
    study = Study.objects.filter(pk=request.session.get(ONBOARDING_STUDY)).first()
    step = services.onboarding_step(profile)
    if step is None:
        return _start_rating(profile, study)
    if request.method == "POST" and request.POST.get("step") != step:
        return redirect("raters:onboarding")  # an earlier step's form sent again: show the current step
    form = ONBOARDING_FORMS[step](request.POST or None, initial=_background_initial(profile))
    if request.method == "POST" and form.is_valid():
        _record_step(step, profile, form.cleaned_data)
        if services.onboarding_step(profile) is None:
            return _start_rating(profile, study)
        return redirect("raters:onboarding")
    context = {"form": form, "step": step, "study": study, "profile": profile}
    return render(request, "raters/onboarding.html", context)


def _record_step(step: str, profile: RaterProfile, data: dict) -> None:
    if step == "consent":
        services.record_consent(profile=profile)
    elif step == "demographics":
        services.record_demographics(profile=profile, **data)
    else:
        services.record_expert_background(profile=profile, **data)


def _background_initial(profile: RaterProfile) -> dict:
    background = getattr(profile, "background", None)
    if background is None:
        return {}
    fields = ["years_in_practice", "specialty", "country", "qualifications", "age_group", "gender", "race_ethnicity"]
    return {name: getattr(background, name) for name in fields}


def _start_rating(profile: RaterProfile, study: Study | None):
    if study is not None and profile.pool.slug == services.CONSUMER:
        services.draw_study_items(study=study, profile=profile)
    return redirect("studies:queue")


@require_GET
def panel_start(request, study_id):
    """The link a crowd panel sends participants to, e.g. /panel/3/?PROLIFIC_PID=...&STUDY_ID=...&SESSION_ID=..."""
    study = get_object_or_404(Study, pk=study_id)
    entry = PanelEntryForm(request.GET)
    if not entry.is_valid():
        text = "This link lacks a valid participant id. Please open the study again from the panel's website."
        return _message(request, title="Participant id missing", text=text, status=400)
    if study.is_locked:
        return _message(request, title="This study has closed", text="It no longer takes ratings.", status=410)
    if services.consumer_study_pool(study) is None or not study.items.exists():
        text = "This study is not open to panel participants."
        return _message(request, title="Not a panel study", text=text, status=404)
    data = entry.cleaned_data
    profile = services.find_or_create_panel_participant(
        study=study,
        participant_id=data["PROLIFIC_PID"],
        panel_study_id=data["STUDY_ID"],
        panel_session_id=data["SESSION_ID"],
    )
    if request.user.pk != profile.user_id:
        login(request, profile.user)
    request.session[ONBOARDING_STUDY] = study.pk
    if services.onboarding_step(profile) is not None:
        return redirect("raters:onboarding")
    return _start_rating(profile, study)


@require_GET
@login_required
def panel_done(request, study_id):
    """The completion code, once every item the participant holds in the study is submitted."""
    study = get_object_or_404(Study, pk=study_id)
    profile = _rater_profile(request.user)
    if not profile.assignments.filter(item__study=study).exists():
        text = "If you came from a panel, open the study again from the panel's website."
        return _message(request, title="You have no items in this study", text=text, status=403)
    left = services.items_left(study=study, profile=profile)
    if left and study.is_locked:
        text = "The study closed before you rated every item. Please contact the study team."
        return _message(request, title="This study has closed", text=text, status=410)
    if left:
        messages.info(request, f"{left} item{'s' if left != 1 else ''} left to rate before you finish.")
        return redirect("studies:queue")
    services.record_completion(profile=profile)
    context = {"study": study, "return_url": services.panel_return_url(study)}
    return render(request, "raters/panel_done.html", context)
