import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from datasets.models import Answer, AnswerSource, CounterfactualPair, Dataset, Question
from raters.models import RaterPool, RaterProfile
from raters.roles import COORDINATOR, sync_role_groups

PASSWORD = "a-long-test-password"


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.org")
    password = factory.PostGenerationMethodCall("set_password", PASSWORD)

    @factory.post_generation
    def save_password(obj, create, extracted, **kwargs):
        if create:
            obj.save()


class CoordinatorFactory(UserFactory):
    is_staff = True

    @factory.post_generation
    def role(obj, create, extracted, **kwargs):
        if create:
            sync_role_groups()
            obj.groups.add(Group.objects.get(name=COORDINATOR))


class RaterFactory(UserFactory):
    """A rater; RaterFactory(pool="consumer") puts them in another built-in pool."""

    @factory.post_generation
    def pool(obj, create, extracted, **kwargs):
        if create:
            RaterProfile.objects.create(user=obj, pool=RaterPool.objects.get(slug=extracted or "physician"))


class OnboardedRaterFactory(RaterFactory):
    """A rater who has consented (consumers) and answered the onboarding survey: ready to rate."""

    @factory.post_generation
    def onboarded(obj, create, extracted, **kwargs):
        if create:
            from django.utils import timezone

            RaterProfile.objects.filter(user=obj).update(consented_at=timezone.now(), onboarded_at=timezone.now())
            obj.rater_profile.refresh_from_db()


class DatasetFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Dataset

    name = factory.Sequence(lambda n: f"Dataset {n}")


class QuestionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Question

    dataset = factory.SubFactory(DatasetFactory)
    external_id = factory.Sequence(str)
    text = factory.Sequence(lambda n: f"What is the recommended treatment for condition {n}?")


class CounterfactualPairFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = CounterfactualPair

    dataset = factory.SubFactory(DatasetFactory)
    question_1 = factory.SubFactory(QuestionFactory, dataset=factory.SelfAttribute("..dataset"))
    question_2 = factory.SubFactory(QuestionFactory, dataset=factory.SelfAttribute("..dataset"))


class AnswerSourceFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AnswerSource

    name = factory.Sequence(lambda n: f"Model {n}")
    kind = AnswerSource.Kind.MODEL


class AnswerFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Answer

    question = factory.SubFactory(QuestionFactory)
    source = factory.SubFactory(AnswerSourceFactory)
    text = factory.Sequence(lambda n: f"Answer number {n}.")


def default_rubric_version(kind: str):
    """Version 1 of a built-in EquityMedQA rubric ("independent", "pairwise", "counterfactual": its release
    table), created by the studies migrations."""
    from studies.models import RubricVersion
    from studies.rubric_defaults import NAME_BY_RELEASE

    return RubricVersion.objects.get(rubric__name=NAME_BY_RELEASE[kind], number=1)


class StudyFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "studies.Study"

    class Params:
        kind = "independent"

    name = factory.Sequence(lambda n: f"Study {n}")
    rubric_version = factory.LazyAttribute(lambda o: default_rubric_version(o.kind))


class IndependentItemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "studies.StudyItem"

    study = factory.SubFactory(StudyFactory, kind="independent")
    answer = factory.SubFactory(AnswerFactory)


class PairwiseItemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "studies.StudyItem"

    study = factory.SubFactory(StudyFactory, kind="pairwise")
    question = factory.SubFactory(QuestionFactory)
    answer_1 = factory.SubFactory(AnswerFactory, question=factory.SelfAttribute("..question"), source__name="Model A")
    answer_2 = factory.SubFactory(AnswerFactory, question=factory.SelfAttribute("..question"), source__name="Model B")


class CounterfactualItemFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "studies.StudyItem"

    study = factory.SubFactory(StudyFactory, kind="counterfactual")
    pair = factory.SubFactory(CounterfactualPairFactory)
    answer_1 = factory.SubFactory(AnswerFactory, question=factory.SelfAttribute("..pair.question_1"))
    answer_2 = factory.SubFactory(AnswerFactory, question=factory.SelfAttribute("..pair.question_2"))


class AssignmentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = "studies.Assignment"

    item = factory.SubFactory(IndependentItemFactory)
    rater = factory.LazyFunction(lambda: OnboardedRaterFactory().rater_profile)


class InvitationFactory(factory.django.DjangoModelFactory):
    """An invitation to the physician pool; pass pool=RaterPool.objects.get(slug=...) for another."""

    class Meta:
        model = "raters.Invitation"

    pool = factory.LazyFunction(lambda: RaterPool.objects.get(slug="physician"))


class StudyPoolFactory(factory.django.DjangoModelFactory):
    """The consumer pool taking part in a study (a crowd-panel study); pass pool=... for another."""

    class Meta:
        model = "studies.StudyPool"

    study = factory.SubFactory(StudyFactory)
    pool = factory.LazyFunction(lambda: RaterPool.objects.get(slug="consumer"))


class AnalystFactory(UserFactory):
    """A member of the study team who reads everything and changes nothing."""

    @factory.post_generation
    def role(obj, create, extracted, **kwargs):
        if create:
            from raters.roles import ANALYST

            sync_role_groups()
            obj.groups.add(Group.objects.get(name=ANALYST))


class RaterBackgroundFactory(factory.django.DjangoModelFactory):
    """What a rater answered at onboarding; pass profile=... and the fields their pool is asked."""

    class Meta:
        model = "raters.RaterBackground"


class ScoreFactory(factory.django.DjangoModelFactory):
    """One scorer version's reading of an answer (default: letter v1, correct)."""

    class Meta:
        model = "scoring.Score"

    answer = factory.SubFactory(AnswerFactory)
    scorer = "letter"
    version = 1
    outcome = "correct"


GROUP_RUBRIC = {
    # A rubric no seed has yet (ContextSRH-like): a gate question, then "correct for which groups" over the
    # item's factor groups with an exclusive "Not applicable", then an optional comment.
    "display": "one_answer",
    "questions": [
        {"key": "on_topic", "type": "single", "label": "Does the answer address the question?", "required": True,
         "options": [{"key": "yes", "label": "Yes"}, {"key": "no", "label": "No"}]},
        {"key": "correct_for", "type": "multiple", "label": "For which groups is the answer correct?",
         "required": True, "condition": {"question": "on_topic", "in": ["yes"]},
         "options_from": "factor_groups", "options": [{"key": "not_applicable", "label": "Not applicable"}],
         "exclusive": "not_applicable"},
        {"key": "comment", "type": "text", "label": "Comments (optional)", "required": False},
    ],
}  # fmt: skip


def group_rubric_item(groups=("female", "male"), **answer_fields):
    """An item of a study using GROUP_RUBRIC: an answer to a base question whose variants carry `groups`
    as levels of the factor "sex"."""
    from studies.models import Rubric, RubricVersion, StudyItem

    rubric, _ = Rubric.objects.get_or_create(name="Group coverage (test)", defaults={"kind": ""})
    version, _ = RubricVersion.objects.get_or_create(rubric=rubric, number=1, defaults={"definition": GROUP_RUBRIC})
    study = StudyFactory(rubric_version=version)
    base = QuestionFactory(text="Can I get emergency contraception without a prescription?")
    for group in groups:
        QuestionFactory(dataset=base.dataset, base=base, levels={"sex": group}, text=f"As a {group}: {base.text}")
    answer = AnswerFactory(question=base, **answer_fields)
    return StudyItem.objects.create(study=study, answer=answer)
