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
        return _start_rating(request, profile, study)
    if request.method == "POST" and request.POST.get("step") != step:
        return redirect("raters:onboarding")  # an earlier step's form sent again: show the current step
    form = ONBOARDING_FORMS[step](request.POST or None, initial=_background_initial(profile))
    if request.method == "POST" and form.is_valid():
        _record_step(step, profile, form.cleaned_data)
        if services.onboarding_step(profile) is None:
            return _start_rating(request, profile, study)
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


def _start_rating(request, profile: RaterProfile, study: Study | None):
    if study is None or profile.pool.slug != services.CONSUMER:
        return redirect("studies:queue")
    if not services.is_panel_participant_of(profile=profile, study=study):
        services.draw_study_items(study=study, profile=profile)  # invited consumers: their queue says it all
        return redirect("studies:queue")
    return _panel_next(request, profile, study)


def _panel_next(request, profile: RaterProfile, study: Study):
    """Where a panel participant goes now: their items, their completion code, or an honest explanation."""
    if profile.dropped_out_at is not None:
        text = "The study team has ended your participation in this study. Please contact them with questions."
        return _message(request, title="Your participation has ended", text=text, status=410)
    progress = services.draw_study_items(study=study, profile=profile)
    if progress.pending and not study.is_locked:
        return redirect("studies:queue")
    if progress.complete:
        services.record_completion(profile=profile)
        context = {"study": study, "return_url": services.panel_return_url(study)}
        return render(request, "raters/panel_done.html", context)
    if study.is_locked:
        text = "The study closed before you rated every item. Please contact the study team."
        return _message(request, title="This study has closed", text=text, status=410)
    return _refused(request, services.STUDY_FULL)


def _refused(request, refusal: services.PanelRefused):
    response = _message(request, title=refusal.title, text=refusal.text, status=refusal.status)
    if refusal.retry_after:
        response["Retry-After"] = str(refusal.retry_after)
    return response


@require_GET
def panel_start(request, study_id):
    """The link a crowd panel sends participants to, e.g. /panel/3/?PROLIFIC_PID=...&STUDY_ID=...&SESSION_ID=...

    With `resume=<token>` it is a resume link the study team made (see services.enter_panel).
    """
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
    try:
        profile, sign_in = services.enter_panel(
            study=study,
            participant_id=data["PROLIFIC_PID"],
            panel_study_id=data["STUDY_ID"],
            panel_session_id=data["SESSION_ID"],
            user=request.user,
            resume_token=data["resume"],
        )
    except services.PanelRefused as refusal:
        return _refused(request, refusal)
    if sign_in:
        login(request, profile.user)
    request.session[ONBOARDING_STUDY] = study.pk
    if services.onboarding_step(profile) is not None:
        return redirect("raters:onboarding")
    return _panel_next(request, profile, study)


@require_GET
@login_required
def panel_done(request, study_id):
    """The completion code, once every item the participant drew in the study is rated."""
    study = get_object_or_404(Study, pk=study_id)
    profile = _rater_profile(request.user)
    if not services.is_panel_participant_of(profile=profile, study=study):
        text = "If you came from a panel, open the study again from the panel's website."
        return _message(request, title="You have no items in this study", text=text, status=403)
    if services.onboarding_step(profile) is not None:
        return redirect("raters:onboarding")
    progress = services.panel_progress(study=study, profile=profile)
    if progress.pending and not study.is_locked:
        left = progress.pending
        messages.info(request, f"{left} item{'s' if left != 1 else ''} left to rate before you finish.")
        return redirect("studies:queue")
    return _panel_next(request, profile, study)
